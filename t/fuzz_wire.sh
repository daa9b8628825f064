#!/bin/sh
# Runs the wire codec's standalone fuzzer (t/fuzz_wire.c built with
# -DORION_FUZZ_STANDALONE) for ORION_FUZZ_SECONDS seconds (default 60),
# from seed ORION_FUZZ_SEED (default: the time, so that every run explores
# new inputs).  Any violated invariant aborts it and fails the test; rerun
# with the seed printed here to reproduce:
#   ORION_FUZZ_SEED=S ORION_FUZZ_SECONDS=N t/fuzz_wire.sh
seconds=${ORION_FUZZ_SECONDS:-60}
seed=${ORION_FUZZ_SEED:-$(date +%s)}
echo "fuzz_wire: ${seconds} s from seed ${seed}"
exec ./t/fuzz_wire_run "$seconds" "$seed"
