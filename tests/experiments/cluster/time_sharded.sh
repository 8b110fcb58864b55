#!/usr/bin/env bash
# Wall time of the tiny validation of tests/experiments/cluster/test_slurm.cpp and of a tiny experiment, each
# run whole and with --jobs 2 (its stages as two local shard processes, merged), in one run, as
# ratios to the whole run (docs/cluster.md, "Measured on the development machine").
#   bash tests/experiments/cluster/time_sharded.sh build/pacer [WORKDIR]
set -euo pipefail
pacer=$(realpath "${1:?usage: time_sharded.sh PACER_BINARY [WORKDIR]}")
dir=${2:-$(mktemp -d /tmp/pacer-time-sharded-XXXXXX)}
mkdir -p "$dir"
cd "$dir"
now() { date +%s.%N; }
quiet() { "$@" >>"$dir/log.txt" 2>&1; }
seconds() {  # seconds COMMAND...: runs it, prints its wall time
  local t0 t1
  t0=$(now)
  quiet "$@"
  t1=$(now)
  echo "$t1 - $t0" | bc -l
}

# The validation's inputs: a profile of the emulated Nano and the 6-job proxy relation of the test.
quiet "$pacer" profile --device emulated:jetson-nano --workload cnn-w0.5@1x28x28 --batch-sizes 8,16,32 --store base.h5
quiet "$pacer" relation --workload cnn-w0.5 --dataset fmnist-proxy --checkpoint none --max-train 1500 \
  --eval-samples 300 --eval-every 256 --screen-samples 0 --target 0.75 --budget 3000 --batch-sizes 8,16,32 \
  --seeds 0,1 --threads 1 --name proxy --out base.h5
cp base.h5 whole.h5
cp base.h5 jobs.h5
validate=(validate --target-dataset fmnist-target-a --checkpoint none --max-train 1500 --eval-samples 300
  --eval-every 256 --target 0.75 --budget 3000 --seeds 0,1 --threads 1 --policies ours,oracle --sensor-rate 20Hz
  --power-limits 6.8W --name v)
v_whole=$(seconds "$pacer" "${validate[@]}" --store whole.h5)
v_jobs=$(seconds "$pacer" "${validate[@]}" --store jobs.h5 --jobs 2)

experiment=(experiment --name e --batch-sizes 16,64 --seeds 0 --caps 1 --max-train 2000 --eval-samples 300
  --eval-every 512 --budget 6000 --pretrain-budget 6000 --pretrain-target 0.6 --target 0.8 --threads 1
  --calibration-points 4)
e_whole=$(seconds "$pacer" "${experiment[@]}" --out e-whole)
e_jobs=$(seconds "$pacer" "${experiment[@]}" --out e-jobs --jobs 2)

printf '| campaign | whole [s] | --jobs 2 [s] | ratio |\n|---|---|---|---|\n'
printf '| validate (oracle 6 jobs, runs 6 jobs) | %.1f | %.1f | %.2f |\n' "$v_whole" "$v_jobs" "$(echo "$v_jobs / $v_whole" | bc -l)"
printf '| experiment (prepare 1, proxy 2, oracle 2, runs 2 jobs) | %.1f | %.1f | %.2f |\n' "$e_whole" "$e_jobs" \
  "$(echo "$e_jobs / $e_whole" | bc -l)"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); files and log in $dir"
