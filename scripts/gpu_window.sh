#!/usr/bin/env bash
# One GPU window, headless, torch + numpy only (issue 28): the GPU throughput record, then paper 004's
# full presets that wait for paper scale, each as far as the window allows. Every finished program
# is a stored unit (results/full/...), so a later run of the same command resumes.
#   OUT=/tmp/out DEADLINE=540 ATTNLAB_COMMIT=$(git rev-parse --short HEAD) scripts/gpu_window.sh
set -u
START=$(date +%s)
DEADLINE=${DEADLINE:-540}          # seconds for the whole window's work
OUT=${OUT:-/tmp/gpu-window}
mkdir -p "$OUT"
export PYTHONPATH=lib ATTNLAB_COMMIT=${ATTNLAB_COMMIT:-unknown}
PY=$(command -v python3 || command -v python)
left() { echo $(( DEADLINE - ($(date +%s) - START) )); }
say() { echo "[$(( $(date +%s) - START )) s] $*" | tee -a "$OUT/window.log"; }

nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
$PY -c "import torch, numpy; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'numpy', numpy.__version__, torch.cuda.get_device_name())" | tee -a "$OUT/window.log"

# 1. The GPU throughput record: a 1,000-model sweep against the plain loop (32 plain models timed, scaled).
say "bench"
timeout $(( $(left) < 170 ? $(left) : 170 )) $PY -m attnlab.bench --device cuda --models 1000 --plain-sample 32 \
    --repeats 1 --no-grouped --no-profile 2>&1 | grep -v 'it/s\]' | tee -a "$OUT/window.log"
say "bench rc=${PIPESTATUS[0]}"
mkdir -p "$OUT/results/bench"; cp results/bench/throughput-cuda.json "$OUT/results/bench/" 2>/dev/null

# 2. Paper 004's full presets, one program per sweep where memory allows (the chunk does not enter the keys).
run() {  # run RESULT CHUNK...
    local id=$1; shift
    for chunk in "$@"; do
        local t; t=$(left)
        if [ "$t" -lt 30 ]; then say "$id: no time left"; return; fi
        say "$id: chunk $chunk, $t s left"
        local s=$(date +%s)
        timeout $(( t - 10 )) $PY -c "import sys; from attnlab.cli import main; sys.exit(main(sys.argv[1:]))" \
            run "$id" --scale full --headless --device cuda -p chunk "$chunk" -q --out "$OUT/runs/$id" \
            2>&1 | tail -5 | tee -a "$OUT/window.log"
        local rc=${PIPESTATUS[0]}
        say "$id: rc=$rc after $(( $(date +%s) - s )) s"
        mkdir -p "$OUT/results/full/${id%%/*}"
        cp -r "results/full/$id" "$OUT/results/full/${id%%/*}/" 2>/dev/null
        [ "$rc" -eq 2 ] || return   # 2: refused (memory): try a smaller program
    done
}
run 004-memorization/fig1a-accuracy-vs-heads 4096 64
run 004-memorization/fig3-aot-vs-mlp 4096 64
run 004-memorization/figs8-10-deeper 4096 64
run 004-memorization/figs5-7-larger-dimension 4096 105 32
say "done"
