#!/bin/sh
# The slow set's full tamper sweep: every kind of change at every target
# (t/tamper.sh with ORION_TAMPER=all).
ORION_TAMPER=all exec sh "${ORION_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}/t/tamper.sh"
