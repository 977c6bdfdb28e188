#!/usr/bin/env bash
# A-B-B-A: the server scenario, old (009196a) and new (38c9cb7), resnet18 64x64, one in flight.
cd /tmp/ab
for side in old new new old old new; do
  cat /proc/pressure/cpu | head -1 > /dev/null
  XDG_CACHE_HOME=/tmp/ab/cache ./$side run resnet18 --image-size 64 --mode infer --scenario server --qps 15 --latency-bound 250 --min-queries 800 --scenario-time 0 -q -o /tmp/ab/results-$side --json > /tmp/ab/$side-$(date +%s).json 2>/tmp/ab/$side.err || echo "$side failed: $(tail -1 /tmp/ab/$side.err)"
done
