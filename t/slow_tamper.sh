#!/bin/sh
# The slow set's tamper sweep: every kind of change once up and once down
# (t/tamper.sh with ORION_TAMPER=kinds; ORION_TAMPER=all t/tamper.sh runs
# every kind at every target, 346 runs, by hand).
ORION_TAMPER=${ORION_TAMPER:-kinds} exec sh "${ORION_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}/t/tamper.sh"
