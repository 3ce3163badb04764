# Attention cheats one at a time per GPU (public-0 only), for a short device budget:
#   bash tools/probes/attention_cheats_serial.sh "cheatA cheatB" "cheatC cheatD"   (GPU 0 list, GPU 1 list)
export PYTHONPATH=$PWD
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir .whl/*.whl
mkdir -p $OUT/serial
lane() { for c in $2; do CUDA_VISIBLE_DEVICES=$1 timeout ${LANE_TIMEOUT:-80} python3 -m pytest env_suites/attention_backward -q -p no:cacheprovider \
  --nodus-submission=tests/cheats/attention_backward/$c.py --nodus-sealed=sealed_fixtures --nodus-call-timeout=60 -k public-0 \
  --nodus-json=$OUT/serial/cheat_$c.json > $OUT/serial/cheat_$c.log 2>&1; echo "$c rc=$?"; done; }
lane 0 "$1" & lane 1 "$2" & wait
python3 tools/grade_table.py $OUT/serial/*.json | grep -v "^   "
