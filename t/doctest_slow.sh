#!/bin/sh
# The slow set's doc tests: the examples marked `doctest slow` (see
# t/doctest.sh), run by make check-slow.
exec sh "$(dirname "$0")/doctest.sh" --slow "$@"
