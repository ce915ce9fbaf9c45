#!/bin/bash
# A GPU machine's checks and first measurements in about ten minutes, for a short loan of one: the
# GPU cases of the test files, the chain's cuda and fused at the six n, then the chain's sweeps and
# the chain chapter's points, each stage under its own time limit. A stage cut by its limit keeps
# the points it measured (every point is saved as it is measured); the machine's data folder is
# packed after each stage, so an interrupted run still brings its points back.
#
#   bash benchmarks/gpu_check.sh [OUT]      # OUT: where the logs and gpu-data.tgz go (default: gpu-check/)
#
# Environment: PYTHON (default python3), WORKERS (pytest workers, default 8), and the stages' limits
# in seconds: TESTS_S (200), BENCH_S (120), SWEEP_S (150), CHAPTER_S (150). Seen on an NVIDIA H200
# with a 16-core host (2026-11-30): the test files in 108 s at 15 workers; the cuda bench at the
# six n in 35 s (the first NVRTC compile of the chain's kernels included).
set -u
OUT=${1:-gpu-check}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false  # jax would take 75% of the GPU from torch and CuPy
T0=$(date +%s)
stage() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
KEY=$($PY -c 'from studylib.harness.data.provenance import machine_key; print(machine_key())') || exit 1
DATA=${STUDYLIB_DATA_DIR:-data}
pack() { tar czf "$OUT/gpu-data.tgz" --exclude='.*.lock' -C "$DATA" "$KEY" 2>/dev/null; }
stage "machine $KEY"
{ nvidia-smi; nvcc --version; $PY -m studylib machine; git rev-parse HEAD; git status --porcelain; } > "$OUT/env.txt" 2>&1

stage "the GPU cases of the test files"
timeout -k 5 "${TESTS_S:-200}" $PY -m pytest -q -n "${WORKERS:-8}" --maxprocesses="${WORKERS:-8}" -p no:cacheprovider \
  -rfE tests/test_chain_envs.py tests/test_chain_conformance.py tests/test_native_arrays.py tests/test_conformance.py \
  tests/test_fused.py tests/test_cuda_backend.py tests/test_chain_cuda_backend.py tests/test_third_simulator.py \
  tests/test_chain_torch_device.py tests/test_native.py > "$OUT/tests.log" 2>&1
echo "pytest exit $?" >> "$OUT/tests.log"
grep -E "passed|failed|^FAILED|^ERROR|pytest exit" "$OUT/tests.log" | tail -12

stage "the chain's cuda and fused at the six n (N = 4096, K = 100)"
for impl in cuda fused; do  # one command each: a refusal of one leaves the other measured
  timeout -k 5 "$(( ${BENCH_S:-120} / 2 ))" $PY -m studylib bench --sim chain --links 1,2,4,8,16,32 --impl $impl \
    --policy mlp,none --num-envs 4096 --steps 100 >> "$OUT/bench.log" 2>&1
  echo "bench $impl exit $?" >> "$OUT/bench.log"
done
cat "$OUT/bench.log"

stage "the chain's sweeps on the GPU"
timeout -k 5 "${SWEEP_S:-150}" $PY -m studylib sweep chain --sim chain --no-progress --impl cuda,fused,jax,torch \
  --links 1,2,4,8 --num-envs 4096,65536 --steps 1,100 --policy none,mlp > "$OUT/sweep.log" 2>&1
echo "sweep exit $?" >> "$OUT/sweep.log"
pack
tail -3 "$OUT/sweep.log"

stage "the chain chapter's points (default preset)"
timeout -k 5 "${CHAPTER_S:-150}" $PY -m studylib measure --chapters chain --no-progress > "$OUT/chapter.log" 2>&1
echo "measure exit $?" >> "$OUT/chapter.log"
pack
tail -3 "$OUT/chapter.log"
stage "done: $OUT/gpu-data.tgz (tar xzf it into data/)"
