#!/bin/bash
# Issue 22 with issue 16's parallel HDF5 (docs/benchmarks.md, "Output through parallel HDF5"):
# bit-identity on 1, 2 and 4 GPUs, then frame 0 of about 10^8 particles a GPU written from 1, 2
# and 4 ranks, every rank writing its block (collective) and rank 0 writing them all. Run as
# scripts/bench-gpus.sh is: from a directory holding mizu (an MPI build) and
# bench_wcsph_6859.json, e.g. the packed .gpu/ of ../shared/device/README.md.
cd "$(dirname "$0")"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 MIZU_SPH_LISTS=0
MPI="mpirun --allow-run-as-root --oversubscribe -x OCL_ICD_FILENAMES=libpocl.so.2:libnvidia-opencl.so.1 -x PATH -x LD_LIBRARY_PATH -x OCL_ICD_VENDORS -x MIZU_SPH_LISTS -x MIZU_COLLECTIVE_OUTPUT"
run() { local np=$1 out=$2; shift 2
  if [ "$np" = 1 ]; then ./mizu run "$@" -o "$out" --device gpu 2>&1; else $MPI -np "$np" ./mizu run "$@" -o "$out" --device gpu 2>&1; fi; }
echo "== bit-identity"
for np in 1 2 4; do run $np /tmp/id$np.h5 bench_wcsph_6859.json --frames 20 --set output.every=10 | grep -E "done|error|output"; done
./mizu compare /tmp/id1.h5 /tmp/id2.h5 | tail -1; ./mizu compare /tmp/id1.h5 /tmp/id4.h5 | tail -1
for spec in "1 0.002046 1" "2 0.001624 1" "4 0.001289 1" "2 0.001624 0" "4 0.001289 0"; do
  set -- $spec
  export MIZU_COLLECTIVE_OUTPUT=$3
  echo "== np=$1 spacing=$2 collective=$3"
  run $1 /tmp/w.h5 bench_wcsph_6859.json --frames 1 --set simulation.fps=500 --set simulation.substeps=20 --set fluids[0].spacing=$2 --set fluids[0].support_radius=$(python3 -c "print(2*$2)") --set output.every=1000 | grep -E "done|wall|writ|output|ranks|error|exchange"
  ls -la /tmp/w.h5 | awk '{print "file bytes", $5}'
  rm -f /tmp/w.h5 /tmp/w.xdmf
done
nvidia-smi --query-gpu=name,memory.total --format=csv
