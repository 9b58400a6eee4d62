#!/bin/bash
# On a machine with 4 GPUs (docs/benchmarks.md, "Four GPUs"): bit-identity of the peer's dam
# break on 1, 2 and 4 ranks, and WCSPH weak scaling at about 2e7 and 1e8 particles a GPU on 1,
# 2 and 4 GPUs; strong scaling of one 2e8-particle run on 1, 2 and 4 GPUs. Run from a directory holding mizu (an MPI build) and bench_wcsph_6859.json,
# e.g. the packed .gpu/ of ../shared/device/README.md: bash bench-gpus.sh. The mpirun flags
# are those the lent GPU image needs (its mpirun hands ranks an OCL_ICD_FILENAMES without
# NVIDIA's driver).
cd "$(dirname "$0")"
export MIZU_SPH_LISTS= OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpirun --allow-run-as-root --oversubscribe -x OCL_ICD_FILENAMES=libpocl.so.2:libnvidia-opencl.so.1 -x PATH -x LD_LIBRARY_PATH -x OCL_ICD_VENDORS -x MIZU_SPH_LISTS"
run() { # np out args...
  local np=$1 out=$2; shift 2
  if [ "$np" = 1 ]; then ./mizu run "$@" -o "$out" --device gpu 2>&1; else $MPI -np "$np" ./mizu run "$@" -o "$out" --device gpu 2>&1; fi
}
echo "== bit-identity"
for np in 1 2 4; do run $np /tmp/id$np.h5 bench_wcsph_6859.json --frames 20 --set output.every=10 | grep -E "done|error"; done
./mizu compare /tmp/id1.h5 /tmp/id2.h5 | tail -1; ./mizu compare /tmp/id1.h5 /tmp/id4.h5 | tail -1
# Weak scaling like for like: distributed runs keep no neighbour lists, so neither does 1 rank.
export MIZU_SPH_LISTS=0
for spec in "1 0.0035" "2 0.00278" "4 0.0022" "1 0.002046" "2 0.001624" "4 0.001289"; do
  set -- $spec
  echo "== weak np=$1 spacing=$2"
  run $1 /tmp/w.h5 bench_wcsph_6859.json --frames 1 --set simulation.fps=500 --set simulation.substeps=20 --set fluids[0].spacing=$2 --set fluids[0].support_radius=$(python3 -c "print(2*$2)") --set output.every=1000 | grep -E "done|wall|output|ranks|error|exchange"
  rm -f /tmp/w.h5 /tmp/w.xdmf
done
for np in 1 2 4; do
  echo "== strong np=$np spacing=0.001624"
  run $np /tmp/s.h5 bench_wcsph_6859.json --frames 1 --set simulation.fps=500 --set simulation.substeps=20 --set fluids[0].spacing=0.001624 --set fluids[0].support_radius=0.003248 --set output.every=1000 | grep -E "done|wall|output|ranks|error"
  rm -f /tmp/s.h5 /tmp/s.xdmf
done
nvidia-smi --query-gpu=name,memory.total --format=csv
