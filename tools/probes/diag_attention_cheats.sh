# Run 26 (H200): two attention cheats at public-0, one per GPU, with stacks dumped and the
# sandboxes' logs copied if a grade stalls. Kept as the exact command of that run.
#   bash tools/probes/diag_attention_cheats.sh
export PYTHONPATH=$PWD
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir .whl/*.whl
g() { CUDA_VISIBLE_DEVICES=$1 timeout 150 python3 -m pytest env_suites/attention_backward -q -p no:cacheprovider --nodus-submission=tests/cheats/attention_backward/$2.py --nodus-sealed=sealed_fixtures --nodus-call-timeout=60 -k "public-0" -o faulthandler_timeout=110 --tb=short --nodus-json=$OUT/$2.json > $OUT/$2.log 2>&1; echo "$2 rc=$?"; }
g 0 correct_only_at_d128 & g 1 flash_audit_stripped &
sleep 100; for f in /dev/shm/nodus-*/sandbox.log /tmp/nodus-*/sandbox.log; do [ -f $f ] && { echo "== $f"; tail -c 1500 $f; }; done > $OUT/sandboxes.txt 2>&1; nvidia-smi --query-compute-apps=pid,used_memory --format=csv >> $OUT/sandboxes.txt
wait
for n in correct_only_at_d128 flash_audit_stripped; do echo "=== $n"; grep -v "^  File\|^    " $OUT/$n.log | tail -25; done; cat $OUT/sandboxes.txt | tail -30
