#!/usr/bin/env bash
# Benchmark of rch-sweep at fleet scale (issues #6, #14 and #17). Rerun it with:
#
#     scripts/bench.sh
#
# It prints, with the targets (warm cache, this project's 2-core machine):
#  1. Scan: for 10k and 100k generated journals, the dry run's wall time
#     (`rch-sweep --dry-run --quiet --lease-dir DIR`) with one scan thread
#     (RCH_SWEEP_SCAN_THREADS=1) and with one a core (the default), the time
#     of `cat` over the same files, timed round-robin in the same rounds
#     (BENCH_ROUNDS, default 7, so that load from other work on a shared
#     machine falls on all alike; the CPU pressure meanwhile is printed), the
#     medians of their per-round ratios (target at 100k, all threads: <= 0.6)
#     and the dry run's peak RSS. rch-sweep reads every byte `cat` reads.
#  1b. Memory: peak RSS of the dry run (all threads, no --verbose) at 10k,
#     100k and 300k journals (BENCH_RSS_COUNTS), once of the benchmark mix
#     (5 % candidates; target <= 8 MiB at 100k and 300k) and once with the
#     same 500 candidates at every size (`gen-leases --candidates 500`):
#     those must agree within 1 MiB, since memory may grow with candidates
#     only. With --verbose, for contrast, every skipped journal is kept.
#  1c. Large journals: 16 candidates of 8 MiB each, a large build's recipe
#     (`gen-leases --only candidate --journal-bytes 8388608`: pretty-printed
#     "target/debug/deps/<name>.rlib": "<64 hex>" lines in the phase's
#     baseline and published). A dry run must judge all 16 candidates; its
#     peak RSS (target <= 16 MiB), its time against `cat` of the same files,
#     round-robin as above (target <= 8x cat), and the MB/s of journal bytes
#     judged, with one scan thread and with all. The same time is also given
#     as a ratio to serde_json's own validation of the same files, on one
#     thread (`examples/json-validate.rs`: each file read whole and checked
#     with `serde_json::from_slice` into `IgnoredAny`), which holds across
#     machines better than the ratio to `cat`. BENCH_LARGE=0 skips it.
#  1d. Giant strings: eight candidates of 60 MiB, each holding one 60 MiB
#     string in its recipe (which the parser must hold whole), judged with
#     the full thread count: as many as this machine gives a scan, and the
#     16 the default starts at most (RCH_SWEEP_SCAN_THREADS=16), and with one.
#     At most two journals over 1 MiB are parsed at once, so the peak RSS
#     stays under 160 MiB whatever the thread count (target). 480 MiB of
#     journals; BENCH_GIANT=0 skips it.
#     An empty lease directory: a dry run and a real run (lock, state saved):
#     target <= 2 ms; also a real run with the state on disk, where fsync
#     costs (target <= 5 ms).
#  2. Concurrency: four candidates on four workers with a fake rch that
#     sleeps T = 2 s finish in <= 1.2 T; on one worker they take about 4 T.
#  3. Drain: a child writing 1 GiB to stderr is drained at >= 500 MB/s and
#     the sweep's peak RSS grows by <= 16 MiB over a child that writes nothing.
#
# Needs: hyperfine and /usr/bin/time (Debian packages `hyperfine`, `time`;
# installed here when run as root, else it says how), python3, cargo.
# Journals are generated into /dev/shm when it is a tmpfs with room (about
# 3.5 KB a journal of the benchmark mix: 350 MB for 100k, 1 GB for 300k,
# 128 MiB for the large ones, 480 MiB for the giant strings), else /tmp;
# BENCH_DIR overrides that.
# BENCH_COUNTS overrides the scan sizes ("" skips them; default
# "10000 100000"), BENCH_RSS_COUNTS the memory sizes (default
# "10000 100000 300000"; "" skips 1b). 1,000,000 journals take about 3.5 GB:
#
#     BENCH_COUNTS= BENCH_RSS_COUNTS="10000 1000000" BENCH_LARGE=0 scripts/bench.sh
#
# Everything generated is removed at exit.
set -euo pipefail
cd "$(dirname "$0")/.."

counts=${BENCH_COUNTS-"10000 100000"}
rss_counts=${BENCH_RSS_COUNTS-"10000 100000 300000"}
large=${BENCH_LARGE:-1}
giant=${BENCH_GIANT:-1}
T=2 # seconds the concurrency fake sleeps

say() { printf '%s\n' "$*"; }
die() { printf 'bench: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------- tools
need_pkgs=()
command -v hyperfine >/dev/null 2>&1 || need_pkgs+=(hyperfine)
[ -x /usr/bin/time ] || need_pkgs+=(time)
if [ ${#need_pkgs[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "bench: installing ${need_pkgs[*]} (Debian packages)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
  else
    die "missing ${need_pkgs[*]}: run 'sudo apt-get update -qq && sudo apt-get install -y ${need_pkgs[*]}'"
  fi
fi
command -v python3 >/dev/null 2>&1 || die "python3 is needed (Debian package python3)"

say "bench: building the release binary and the generator"
cargo build --release --locked --quiet --bin rch-sweep --example gen-leases --example json-validate
bin=$PWD/target/release/rch-sweep
gen=$PWD/target/release/examples/gen-leases
validate=$PWD/target/release/examples/json-validate

# ---------------------------------------------------------------- where
# About 3.5 KB a journal of the benchmark mix, plus slack; 128 MiB for the
# large journals, 480 MiB for the giant strings; one directory exists at a time.
need_kb=$(( 544 * 1024 ))
for count in $counts $rss_counts; do
  if [ $(( count * 5 + 65536 )) -gt "$need_kb" ]; then need_kb=$(( count * 5 + 65536 )); fi
done
pick_base() {
  if [ -n "${BENCH_DIR:-}" ]; then echo "$BENCH_DIR"; return; fi
  if [ -d /dev/shm ] && [ -w /dev/shm ] && [ "$(stat -f -c %T /dev/shm)" = tmpfs ]; then
    local avail_kb
    avail_kb=$(df -Pk /dev/shm | awk 'NR == 2 { print $4 }')
    if [ "$avail_kb" -gt "$need_kb" ]; then echo /dev/shm; return; fi
  fi
  echo "${TMPDIR:-/tmp}"
}
base=$(pick_base)
root=$(mktemp -d "$base/rch-sweep-bench.XXXXXX")
cleanup() { rm -rf "$root"; }
trap cleanup EXIT

# ---------------------------------------------------------------- helpers
# mean and stddev (seconds) of command N in a hyperfine JSON export.
stat_of() { # file index field
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][int(sys.argv[2])]; print(r[sys.argv[3]] or 0)' "$1" "$2" "$3"
}
ms() { python3 -c 'import sys; print(f"{float(sys.argv[1]) * 1000:.1f}")' "$1"; }
calc() { python3 -c "import sys; print($1)"; }
verdict() { # condition-text (python expression)
  if [ "$(calc "$1")" = True ]; then echo PASS; else echo FAIL; fi
}
# Peak RSS in KiB of one run of a command (its exit status is ignored).
rss_kb() {
  /usr/bin/time -v -o "$root/time.txt" "$@" >/dev/null 2>&1 || true
  awk -F': ' '/Maximum resident set size/ { print $2 }' "$root/time.txt"
}
# The largest peak RSS of three runs.
peak_rss_kb() {
  local best=0 kb
  for _ in 1 2 3; do
    kb=$(rss_kb "$@")
    if [ "$kb" -gt "$best" ]; then best=$kb; fi
  done
  echo "$best"
}
now_ns() { date +%s%N; }
# Round-robin timing: each round runs every command once (after one warm-up
# round), so load from other work on the machine falls on all of them alike.
# Prints JSON: per command the median, min and max seconds and the median
# (and range) of its per-round ratio to the last command; and "pressure",
# the share of the wall time some task waited for a CPU (/proc/pressure/cpu),
# to show how busy the machine was meanwhile.
interleave() { # rounds name command [name command...]
  python3 - "$@" <<'EOF'
import json, statistics, subprocess, sys, time

rounds = int(sys.argv[1])
pairs = list(zip(sys.argv[2::2], sys.argv[3::2]))

def pressure_us():
    try:
        with open("/proc/pressure/cpu") as f:
            return int(f.readline().split("total=")[1])
    except (OSError, IndexError, ValueError):
        return None

def run(cmd):
    start = time.perf_counter()
    subprocess.run(cmd, shell=True, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start

for _, cmd in pairs:  # warm-up round
    run(cmd)
times = {name: [] for name, _ in pairs}
p0, t0 = pressure_us(), time.perf_counter()
for _ in range(rounds):
    for name, cmd in pairs:
        times[name].append(run(cmd))
p1, t1 = pressure_us(), time.perf_counter()
base = pairs[-1][0]
out = {"pressure": -1 if p0 is None else (p1 - p0) / 1e6 / (t1 - t0) * 100}
for name, _ in pairs:
    ratios = [a / b for a, b in zip(times[name], times[base])]
    out[name] = {
        "median": statistics.median(times[name]),
        "min": min(times[name]),
        "max": max(times[name]),
        "ratio": statistics.median(ratios),
        "ratio_min": min(ratios),
        "ratio_max": max(ratios),
        "times": times[name],
    }
json.dump(out, sys.stdout)
EOF
}
# A field of a JSON file: jget FILE KEY...
jget() {
  python3 -c 'import json, sys
value = json.load(open(sys.argv[1]))
for key in sys.argv[2:]:
    value = value[key]
print(value)' "$@"
}
# hyperfine with its report kept in a file (shown when it fails).
hf() { # report-file hyperfine-args...
  local out=$1
  shift
  if ! hyperfine --style basic "$@" >"$out" 2>&1; then
    cat "$out" >&2
    die "hyperfine failed"
  fi
}

# A candidate journal (from the demo directory) rewritten with a new wrapper
# id and worker, in `dir`.
candidate() { # dir worker
  python3 - "$1" "$2" <<'EOF'
import json, sys, uuid
directory, worker = sys.argv[1], sys.argv[2]
with open("examples/leases/rchw-6f1c3b7e-2a4d-4c8e-9b1f-3e5a7d9c2b10.json") as f:
    lease = json.load(f)
wrapper = f"rchw-{uuid.uuid4()}"
lease["identity"]["local_wrapper_id"] = wrapper
lease["recovery"]["wrapper_id"] = wrapper
lease["worker_id"] = worker
lease["recovery"]["worker"]["id"] = worker
with open(f"{directory}/{wrapper}.json", "w") as f:
    json.dump(lease, f, indent=2)
EOF
}
fake() { # path body: an rch whose `jobs recover` runs body; anything else
  # (`daemon status` included) is a usage error, as an rch without that
  # command answers, so a run checks no daemon and only recoveries are timed
  printf '#!/bin/sh\n[ "$1 $2" = "jobs recover" ] || { echo "error: unrecognized subcommand" >&2; exit 2; }\n%s\n' "$2" >"$1"
  chmod 755 "$1"
}

results=()
record() { results+=("$1"); say "$1"; }

say "bench: $(nproc) cores, $(uname -r), data under $root ($(stat -f -c %T "$root"))"
say "bench: $("$bin" --version)"
# What the default scan uses: one thread a core this process may use.
# (nproc counts the CPU affinity; a cgroup CPU quota lowers it further, and
# rch-sweep starts at most 16.)
threads=$(nproc)
if [ "$threads" -gt 16 ]; then threads=16; fi

# ---------------------------------------------------------------- 1. scan
now_ms=$(date +%s%3N)
for count in $counts; do
  dir=$root/leases-$count
  say ""
  say "== scan: $count journals"
  "$gen" --count "$count" --dir "$dir" --seed 42 --now-ms "$now_ms" --live-pid $$
  total_bytes=$(find "$dir" -name '*.json' -printf '%s\n' | awk '{ s += $1 } END { print s }')
  say "bytes: $total_bytes in all"
  # Warm the page cache and show what the sweep makes of the directory.
  find "$dir" -name '*.json' -print0 | xargs -0 cat >/dev/null
  "$bin" --dry-run --json --lease-dir "$dir" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print("dry run: scanned", d["scanned"], "candidates", d["candidates"], "skipped", json.dumps(d["skipped"], sort_keys=True))'
  json=$root/scan-$count.json
  interleave "${BENCH_ROUNDS:-7}" \
    dry "$bin --dry-run --quiet --lease-dir $dir" \
    dry1 "RCH_SWEEP_SCAN_THREADS=1 $bin --dry-run --quiet --lease-dir $dir" \
    cat "find $dir -name '*.json' -print0 | xargs -0 cat > /dev/null" >"$json"
  dry=$(jget "$json" dry median); dry1=$(jget "$json" dry1 median)
  cat_all=$(jget "$json" cat median)
  ratio=$(calc "f'{$(jget "$json" dry ratio):.2f}'")
  ratio_range=$(calc "f'{$(jget "$json" dry ratio_min):.2f}-{$(jget "$json" dry ratio_max):.2f}'")
  ratio1=$(calc "f'{$(jget "$json" dry1 ratio):.2f}'")
  pressure=$(calc "f'{$(jget "$json" pressure):.0f}'") # -1: not known
  rss=$(peak_rss_kb "$bin" --dry-run --quiet --lease-dir "$dir")
  rss_mib=$(calc "f'{$rss / 1024:.1f}'")
  record "scan $count (medians of ${BENCH_ROUNDS:-7} rounds; CPU pressure $pressure %): dry run $threads threads $(ms "$dry") ms = ${ratio}x cat (rounds ${ratio_range}x); 1 thread $(ms "$dry1") ms = ${ratio1}x cat; cat $(ms "$cat_all") ms; peak RSS $rss_mib MiB"
  if [ "$count" = 100000 ]; then
    record "target 100k dry run ($threads threads) <= 0.6x cat: $(verdict "$(jget "$json" dry ratio) <= 0.6") (${ratio}x)"
  fi
  rm -rf "$dir"
done

# ---------------------------------------------------------------- 1b. memory
rss_fixed=()
for count in $rss_counts; do
  say ""
  say "== memory: $count journals"
  for mix in benchmark fixed; do
    dir=$root/rss-$mix-$count
    extra=()
    if [ "$mix" = fixed ]; then extra=(--candidates 500); fi
    "$gen" --count "$count" --dir "$dir" --seed 42 --now-ms "$now_ms" --live-pid $$ "${extra[@]}"
    candidates=$("$bin" --dry-run --json --lease-dir "$dir" | python3 -c 'import json, sys; print(json.load(sys.stdin)["candidates"])')
    rss=$(peak_rss_kb "$bin" --dry-run --quiet --lease-dir "$dir")
    line="memory $count, $mix mix: $candidates candidates; peak RSS $(calc "f'{$rss / 1024:.1f}'") MiB"
    if [ "$mix" = fixed ]; then
      rss_fixed+=("$rss")
      verbose=$(peak_rss_kb "$bin" --dry-run --verbose --lease-dir "$dir")
      line="$line ($(calc "f'{$verbose / 1024:.1f}'") MiB with --verbose, which keeps every skipped row)"
    else
      case $count in
        100000 | 300000) line="$line; target <= 8 MiB: $(verdict "$rss <= 8 * 1024")" ;;
      esac
    fi
    record "$line"
    rm -rf "$dir"
  done
done
if [ ${#rss_fixed[@]} -gt 1 ]; then
  kbs=$(IFS=,; echo "${rss_fixed[*]}")
  spread=$(calc "max([$kbs]) - min([$kbs])")
  record "target same candidates, same peak RSS within 1 MiB at $(echo $rss_counts | tr ' ' '/') journals: $(verdict "$spread <= 1024") (spread $spread KiB)"
fi

# ---------------------------------------------------------------- 1c. large journals
if [ "$large" = 1 ]; then
  say ""
  say "== large journals: 16 candidates of 8 MiB"
  dir=$root/large
  "$gen" --count 16 --dir "$dir" --seed 42 --now-ms "$now_ms" --live-pid $$ \
    --only candidate --journal-bytes 8388608
  large_bytes=$(find "$dir" -name '*.json' -printf '%s\n' | awk '{ s += $1 } END { print s }')
  cat "$dir"/*.json >/dev/null
  judged=$("$bin" --dry-run --json --lease-dir "$dir" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(d["scanned"], d["candidates"])')
  [ "$judged" = "16 16" ] || die "a dry run did not judge all 16 large journals candidates (scanned, candidates: $judged)"
  json=$root/large.json
  "$validate" "$dir"/*.json || die "serde_json refuses the large journals"
  interleave "${BENCH_ROUNDS:-7}" \
    dry "$bin --dry-run --quiet --lease-dir $dir" \
    dry1 "RCH_SWEEP_SCAN_THREADS=1 $bin --dry-run --quiet --lease-dir $dir" \
    serde "$validate $dir/*.json" \
    cat "cat $dir/*.json > /dev/null" >"$json"
  dry=$(jget "$json" dry median); dry1=$(jget "$json" dry1 median); cat_all=$(jget "$json" cat median)
  serde=$(jget "$json" serde median)
  # Medians of the per-round ratios to serde_json's validation (each round
  # ran both).
  per_round() { # json name base -> median of name/base over the rounds
    python3 -c 'import json, statistics, sys
d = json.load(open(sys.argv[1]))
ratios = [a / b for a, b in zip(d[sys.argv[2]]["times"], d[sys.argv[3]]["times"])]
print("%.2f" % statistics.median(ratios))' "$@"
  }
  vs_serde=$(per_round "$json" dry serde); vs_serde1=$(per_round "$json" dry1 serde)
  ratio=$(calc "f'{$(jget "$json" dry ratio):.1f}'")
  ratio_range=$(calc "f'{$(jget "$json" dry ratio_min):.1f}-{$(jget "$json" dry ratio_max):.1f}'")
  ratio1=$(calc "f'{$(jget "$json" dry1 ratio):.1f}'")
  pressure=$(calc "f'{$(jget "$json" pressure):.0f}'")
  rate=$(calc "f'{$large_bytes / $dry / 1e6:.0f}'"); rate1=$(calc "f'{$large_bytes / $dry1 / 1e6:.0f}'")
  rss=$(peak_rss_kb "$bin" --dry-run --quiet --lease-dir "$dir")
  rss1=$(peak_rss_kb env RCH_SWEEP_SCAN_THREADS=1 "$bin" --dry-run --quiet --lease-dir "$dir")
  record "large journals: 16 x 8 MiB ($large_bytes bytes), all 16 judged candidates (medians of ${BENCH_ROUNDS:-7} rounds; CPU pressure $pressure %): dry run $threads threads $(ms "$dry") ms = ${ratio}x cat (rounds ${ratio_range}x), $rate MB/s; 1 thread $(ms "$dry1") ms = ${ratio1}x cat, $rate1 MB/s; cat $(ms "$cat_all") ms; peak RSS $(calc "f'{$rss / 1024:.1f}'") MiB ($threads threads), $(calc "f'{$rss1 / 1024:.1f}'") MiB (1 thread)"
  record "large journals against serde_json's own validation (from_slice into IgnoredAny, 1 thread, each file read whole): $(ms "$serde") ms, $(calc "f'{$large_bytes / $serde / 1e6:.0f}'") MB/s; dry run $threads threads = ${vs_serde}x it, 1 thread = ${vs_serde1}x it"
  record "target large journals: peak RSS <= 16 MiB: $(verdict "max($rss, $rss1) <= 16 * 1024"); dry run ($threads threads) <= 8x cat: $(verdict "$(jget "$json" dry ratio) <= 8") (${ratio}x)"
  rm -rf "$dir"
fi

# ---------------------------------------------------------------- 1d. giant strings
if [ "$giant" = 1 ]; then
  say ""
  say "== giant strings: 8 candidates of 60 MiB, each one 60 MiB string"
  dir=$root/giant
  mkdir -p "$dir"
  python3 - "$dir" <<'EOF'
import json, sys, uuid
directory = sys.argv[1]
with open("examples/leases/rchw-6f1c3b7e-2a4d-4c8e-9b1f-3e5a7d9c2b10.json") as f:
    demo = json.load(f)
size = 60 * 1024 * 1024
for n in range(8):
    lease = json.loads(json.dumps(demo))
    wrapper = f"rchw-{uuid.uuid4()}"
    lease["identity"]["local_wrapper_id"] = wrapper
    lease["recovery"]["wrapper_id"] = wrapper
    lease["worker_id"] = lease["recovery"]["worker"]["id"] = f"giant{n}"
    lease["recovery"]["note"] = "@"
    text = json.dumps(lease, indent=2)
    # The note grows to fill the journal to exactly 60 MiB.
    text = text.replace('"@"', '"' + "x" * (size - len(text) + 1) + '"')
    assert len(text) == size
    with open(f"{directory}/{wrapper}.json", "w") as f:
        f.write(text)
EOF
  cat "$dir"/*.json >/dev/null
  judged=$("$bin" --dry-run --json --lease-dir "$dir" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(d["scanned"], d["candidates"])')
  [ "$judged" = "8 8" ] || die "a dry run did not judge all 8 giant journals candidates (scanned, candidates: $judged)"
  rss=$(peak_rss_kb "$bin" --dry-run --quiet --lease-dir "$dir")
  rss16=$(peak_rss_kb env RCH_SWEEP_SCAN_THREADS=16 "$bin" --dry-run --quiet --lease-dir "$dir")
  rss1=$(peak_rss_kb env RCH_SWEEP_SCAN_THREADS=1 "$bin" --dry-run --quiet --lease-dir "$dir")
  mib() { calc "f'{$1 / 1024:.1f}'"; }
  record "giant strings: 8 x 60 MiB, each one string, all 8 judged candidates: peak RSS $(mib "$rss") MiB ($threads threads), $(mib "$rss16") MiB (16 threads), $(mib "$rss1") MiB (1 thread)"
  record "target giant strings: peak RSS < 160 MiB at any thread count: $(verdict "max($rss, $rss16, $rss1) < 160 * 1024")"
  rm -rf "$dir"
fi

# ---------------------------------------------------------------- empty dir
say ""
say "== empty lease directory"
mkdir -p "$root/empty/job-leases" "$root/empty-state"
# tmpfs makes fsync free; a timer's state lives on a disk, so the real run is
# also timed with its state file in /var/tmp when that is not a tmpfs.
disk_state=
if [ -d /var/tmp ] && [ -w /var/tmp ] && [ "$(stat -f -c %T /var/tmp)" != tmpfs ]; then
  disk_state=$(mktemp -d /var/tmp/rch-sweep-bench.XXXXXX)
  cleanup() { rm -rf "$root" "$disk_state"; }
fi
commands=(
  -n "dry run" "$bin --dry-run --quiet --lease-dir $root/empty/job-leases"
  -n "run" "$bin --quiet --lease-dir $root/empty/job-leases --state-file $root/empty-state/backoff.json --rch /bin/true"
)
if [ -n "$disk_state" ]; then
  commands+=(-n "run, state on disk" "$bin --quiet --lease-dir $root/empty/job-leases --state-file $disk_state/backoff.json --rch /bin/true")
fi
json=$root/empty.json
hf "$root/hyperfine-empty.txt" -N --warmup 20 --runs 200 --export-json "$json" "${commands[@]}"
empty_dry=$(stat_of "$json" 0 mean); empty_run=$(stat_of "$json" 1 mean)
empty_worst=$(calc "max($empty_dry, $empty_run)")
line="empty dir: dry run $(ms "$empty_dry") ms; real run (lock, state saved) $(ms "$empty_run") ms"
disk_verdict=
if [ -n "$disk_state" ]; then
  empty_disk=$(stat_of "$json" 2 mean)
  line="$line; real run with the state on disk ($(stat -f -c %T /var/tmp), fsync) $(ms "$empty_disk") ms"
  disk_verdict="; on disk <= 5 ms: $(verdict "$empty_disk <= 0.005")"
fi
record "$line"
record "target empty dir run <= 2 ms: $(verdict "$empty_worst <= 0.002")$disk_verdict"

# ---------------------------------------------------------------- 2. concurrency
say ""
say "== concurrency: 4 candidates, fake rch 'sleep $T; exit 1'"
fake "$root/rch-sleep" "sleep $T; exit 1"
for layout in four one; do
  dir=$root/conc-$layout/job-leases
  mkdir -p "$dir"
  for worker in w1 w2 w3 w4; do
    [ "$layout" = one ] && worker=w1
    candidate "$dir" "$worker"
  done
  state=$root/conc-$layout-state/backoff.json
  # Once for the record: all four attempted and failed.
  summary=$("$bin" --json --rch "$root/rch-sleep" --lease-dir "$dir" --state-file "$state" 2>/dev/null || true)
  python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["attempted"] == 4 and d["failed"] == 4, d
' "$summary" || die "the concurrency setup did not attempt 4 recoveries: $summary"
  json=$root/conc-$layout.json
  hf "$root/hyperfine-conc-$layout.txt" -i --runs 3 --prepare "rm -f $state" --export-json "$json" \
    -n "$layout" "$bin --quiet --rch $root/rch-sleep --lease-dir $dir --state-file $state"
  declare "conc_$layout=$(stat_of "$json" 0 mean)"
done
record "concurrency: 4 workers $(calc "f'{$conc_four:.2f}'") s = $(calc "f'{$conc_four / $T:.2f}'") T; 1 worker $(calc "f'{$conc_one:.2f}'") s = $(calc "f'{$conc_one / $T:.2f}'") T (T = $T s)"
record "target 4 workers <= 1.2 T: $(verdict "$conc_four <= 1.2 * $T"); 1 worker about 4 T: $(verdict "3.8 * $T <= $conc_one <= 4.4 * $T")"

# ---------------------------------------------------------------- 3. drain
say ""
say "== drain: one candidate, fake rch writes 1 GiB to stderr"
dir=$root/drain/job-leases
mkdir -p "$dir"
candidate "$dir" w1
fake "$root/rch-flood" "head -c 1073741824 /dev/zero >&2; exit 1"
fake "$root/rch-quiet" "exit 1"
state=$root/drain-state/backoff.json
measure() { # fake -> "wall_seconds rss_kb"
  rm -f "$state"
  local start end kb
  start=$(now_ns)
  kb=$(rss_kb "$bin" --quiet --rch "$1" --lease-dir "$dir" --state-file "$state")
  end=$(now_ns)
  echo "$(calc "($end - $start) / 1e9") $kb"
}
best_rate=0; worst_rate=999999; flood_rss=0; quiet_rss=0
for run in 1 2 3; do
  read -r wall kb < <(measure "$root/rch-flood")
  rate=$(calc "f'{1073741824 / $wall / 1e6:.0f}'")
  say "flood run $run: $(calc "f'{$wall:.3f}'") s, $rate MB/s, peak RSS $kb KiB"
  if [ "$rate" -gt "$best_rate" ]; then best_rate=$rate; fi
  if [ "$rate" -lt "$worst_rate" ]; then worst_rate=$rate; fi
  if [ "$kb" -gt "$flood_rss" ]; then flood_rss=$kb; fi
  read -r wall kb < <(measure "$root/rch-quiet")
  say "quiet run $run: $(calc "f'{$wall:.3f}'") s, peak RSS $kb KiB"
  if [ "$kb" -gt "$quiet_rss" ]; then quiet_rss=$kb; fi
done
growth=$(( flood_rss - quiet_rss ))
record "drain: 1 GiB of stderr at $worst_rate to $best_rate MB/s (3 whole runs); peak RSS $flood_rss KiB vs $quiet_rss KiB with a silent child: $(printf '%+d' "$growth") KiB"
record "target drain >= 500 MB/s: $(verdict "$worst_rate >= 500"); RSS growth <= 16 MiB: $(verdict "$growth <= 16 * 1024")"

say ""
say "== summary"
printf '%s\n' "${results[@]}"
