#!/usr/bin/env bash
# Download the wheels benchmarks/device_scale.sh installs offline (CPython 3.11, manylinux x86_64) into a folder.
#
#     bash benchmarks/fetch_wheels.sh                 # -> shared/wheels/
#     bash benchmarks/fetch_wheels.sh DIR [--python-version 3.12] [--no-numba] [--crowd-kit]
#
# What: benchmarks/requirements-device.txt (numpy, scipy, pandas, pyarrow, dask, distributed, numba and their
# dependencies: 29 wheels, 181 MB for CPython 3.11; pyarrow 55 MB, llvmlite 60 MB, scipy 35 MB, numpy 17 MB, pandas
# 12 MB). --no-numba leaves out numba and llvmlite (118 MB; the engines then run numpy's code, and
# device_scale.sh installs the rest without it). --crowd-kit adds crowd-kit *without* its
# dependencies beyond these (its text-aggregation extras pull in transformers, ~100 MB more; its Dawid-Skene needs
# only numpy/pandas/scipy/attrs/tqdm/scikit-learn, which are then added). Needs pip and network; nothing is
# installed here.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:-$here/../shared/wheels}"
[ $# -gt 0 ] && shift
pyver=3.11
crowdkit=0
numba=1
while [ $# -gt 0 ]; do
  case "$1" in
    --python-version) pyver="$2"; shift 2 ;;
    --crowd-kit) crowdkit=1; shift ;;
    --no-numba) numba=0; shift ;;
    *) echo "unknown option: $1" >&2; exit 2 ;;
  esac
done
abi="cp${pyver/./}"
mkdir -p "$dir"
pip=(python3 -m pip download --dest "$dir" --only-binary=:all: --platform manylinux2014_x86_64
     --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 --platform linux_x86_64
     --python-version "$pyver" --implementation cp --abi "$abi" --abi abi3 --abi none)
reqs="$here/requirements-device.txt"
if [ "$numba" = 0 ]; then
  reqs="$(mktemp)"; grep -v '^numba' "$here/requirements-device.txt" > "$reqs"
fi
"${pip[@]}" -r "$reqs"
if [ "$crowdkit" = 1 ]; then
  "${pip[@]}" --no-deps "crowd-kit==1.4.2"
  "${pip[@]}" attrs tqdm scikit-learn
fi
du -sh "$dir"
ls "$dir" | wc -l | xargs echo "wheels:"
