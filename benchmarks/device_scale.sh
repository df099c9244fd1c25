#!/usr/bin/env bash
# Issue 29's table on a many-core machine without network, in one command (~7 minutes on 16 cores, 128 GB):
#
#     OUT=/some/folder bash benchmarks/device_scale.sh [--wheels DIR] [--sizes 1e7,1e8] [--workers 1,4,16]
#                                                      [--budget 420] [--iters 10]
#
# 1. A virtual environment in $TMPDIR (the repository's .venv is not used), with the system's site-packages
#    visible, and numpy, scipy, pandas, pyarrow, dask, distributed, numba installed offline from the wheels in
#    DIR (default: shared/wheels, made by benchmarks/fetch_wheels.sh; a package the system already has at a
#    version crowdlab accepts is kept).
# 2. benchmarks/bench_dask.py at each size: pyarrow's read, in memory (n_jobs 1 and every core), Dask with the
#    --workers (1, 4, 16), streaming; each size only while the time budget (--budget seconds, default 420, counted
#    from the start) leaves room: 10^8 runs with 5 iterations, in memory and Dask without its 1 worker and without
#    streaming (each of those alone takes minutes there). Every row is printed and saved as soon as it is measured,
#    so a run cut by the budget keeps what it measured.
# Results: $OUT/bench_<size>.txt (the printed table, targets beside it) and .json, $OUT/machine.txt, $OUT/pip.log.
# Nothing here needs the network; a failing step is written to $OUT and the script goes on to the next.
set -uo pipefail
start=$(date +%s)
root="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${OUT:-$root/out-device}"
wheels="$root/shared/wheels"
sizes="1e7,1e8"
workers="1,4,16"
budget=420
iters=10
given_py=""
while [ $# -gt 0 ]; do
  case "$1" in
    --wheels) wheels="$2"; shift 2 ;;
    --sizes) sizes="$2"; shift 2 ;;
    --workers) workers="$2"; shift 2 ;;
    --budget) budget="$2"; shift 2 ;;
    --iters) iters="$2"; shift 2 ;;
    --python) given_py="$2"; shift 2 ;;
    *) echo "unknown option: $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$OUT"
left() { echo $(( budget - ($(date +%s) - start) )); }
say() { echo "[$(( $(date +%s) - start )) s] $*" | tee -a "$OUT/log.txt"; }

# ---- the machine
{
  echo "date: $(date -u)"; echo "host: $(uname -a)"; echo "cores: $(nproc)"
  grep -m1 "model name" /proc/cpuinfo || true
  free -g | head -2; echo "load: $(cat /proc/loadavg)"
} > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"

# ---- the environment: --python PY uses that interpreter as it is (its packages, and PYTHONPATH, e.g. wheels
# unpacked with pip install --target); else a Python 3.11 if there is one (the wheels' version), else python3
py=""
for c in python3.11 python3; do
  if command -v "$c" >/dev/null 2>&1; then py="$(command -v "$c")"; break; fi
done
[ -n "$py" ] || { say "no python3 on this machine"; exit 1; }
say "python: $py ($("$py" -V 2>&1)); wheels: $wheels ($(ls "$wheels" 2>/dev/null | wc -l) files)"
if [ -n "$given_py" ]; then
  vpy="$given_py"
  say "using $vpy as it is (--python)"
else
  venv="${TMPDIR:-/tmp}/crowdlab-device-venv"
  rm -rf "$venv"
  if ! "$py" -m venv --system-site-packages "$venv" >>"$OUT/pip.log" 2>&1; then
    say "python -m venv failed (see pip.log); using $py itself"
    vpy="$py"
  else
    vpy="$venv/bin/python"
  fi
  need=("numpy>=2.0.2" "scipy>=1.13" "pandas>=3.1" "pyarrow>=16" "dask[dataframe]>=2025.3" "distributed>=2025.3"
        "numba>=0.60")
  if ! "$vpy" -c "import numpy, scipy, pandas, pyarrow, dask.dataframe, distributed, numba" 2>/dev/null \
     || ! "$vpy" - <<'EOF' 2>/dev/null
import pandas, numpy
assert tuple(int(x) for x in pandas.__version__.split(".")[:2]) >= (3, 1)
assert tuple(int(x) for x in numpy.__version__.split(".")[:2]) >= (2, 0)
EOF
  then
    say "installing from $wheels (offline)"
    if ! "$vpy" -m pip install --no-index --find-links "$wheels" "${need[@]}" >>"$OUT/pip.log" 2>&1; then
      say "pip install failed: the last lines of pip.log:"; tail -5 "$OUT/pip.log" | tee -a "$OUT/log.txt"
      # without numba the engines run their numpy code: try the rest alone
      "$vpy" -m pip install --no-index --find-links "$wheels" "${need[@]:0:6}" >>"$OUT/pip.log" 2>&1 \
        || { say "cannot install the core packages; stopping"; exit 1; }
    fi
  fi
fi
"$vpy" -c "import numpy, scipy, pandas, pyarrow, dask, distributed; print('numpy', numpy.__version__, 'scipy', scipy.__version__, 'pandas', pandas.__version__, 'pyarrow', pyarrow.__version__, 'dask', dask.__version__)" 2>&1 | tee -a "$OUT/machine.txt"
"$vpy" -c "import numba; print('numba', numba.__version__)" 2>&1 | tee -a "$OUT/machine.txt"
say "environment ready"

# ---- the benchmark, size by size, while the budget allows
cd "$root"
export CROWDLAB_KERNELS="${CROWDLAB_KERNELS:-}"
IFS=',' read -ra list <<<"$sizes"
for size in "${list[@]}"; do
  n=$("$vpy" -c "print(int(float('$size')))")
  it=$iters; w=$workers
  if [ "$n" -ge 100000000 ]; then
    it=5
    w=$(echo "$workers" | tr ',' '\n' | grep -vx 1 | paste -sd, -)
    [ -n "$w" ] || w=16
  fi
  # a size needs about: 10^7 ~ 2-3 min, 10^8 ~ 4 min (generation on every core, in memory twice, Dask twice)
  want=$(( n >= 100000000 ? 180 : 30 ))
  if [ "$(left)" -lt "$want" ]; then
    say "skipping $size labels: $(left) s of the budget left (needs ~$want s)"; continue
  fi
  engines="memory,dask,stream"
  [ "$n" -ge 100000000 ] && engines="memory,dask"
  say "bench_dask.py --sizes $size --workers $w --iters $it (budget left $(left) s)"
  timeout --signal=INT "$(left)" "$vpy" benchmarks/bench_dask.py --sizes "$size" --workers "$w" --iters "$it" \
    --engines "$engines" --files 16 --timeout "$(left)" --json "$OUT/bench_$size.json" 2>>"$OUT/stderr.txt" \
    | tee "$OUT/bench_$size.txt"
  say "done $size (exit ${PIPESTATUS[0]})"
done
say "finished; results in $OUT"
