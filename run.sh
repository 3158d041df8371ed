#!/usr/bin/env bash
# panes' front door: sets up what it needs, then runs one thing.
#
#   bash run.sh demo    set up, generate demo events, materialise every asset, run checks, summarise
#   bash run.sh test    set up, run the test suite
#   bash run.sh dev     set up, start the Dagster UI (dg dev) on http://127.0.0.1:3000
#   bash run.sh docs    set up .venv, build the docs site strictly into site/ (mkdocs.yml), then
#                       serve it on http://127.0.0.1:8000 (rebuilt on every change)
#   bash run.sh setup   only set up: Java 17+, a virtualenv in .venv with pinned packages, and
#                       the pinned JVM jars (delta-spark, hadoop-aws) from Maven Central
#
# Needs Python 3.11 (or 3.12/3.13), Java 17 or 21 and Maven. Where Java or Maven is missing and
# apt-get is usable as root, it installs Debian's packages; otherwise it says what to install.
set -euo pipefail
cd "$(dirname "$0")"

say() { printf '[panes] %s\n' "$*" >&2; }

find_python() {
  for candidate in "${PYTHON:-}" python3.11 python3.12 python3.13 python3; do
    [ -n "$candidate" ] || continue
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys; sys.exit(not ((3, 11) <= sys.version_info[:2] < (3, 14)))' 2>/dev/null; then
      echo "$candidate"; return 0
    fi
  done
  say "Python 3.11 to 3.13 is required (found none); install python3.11 and retry"
  exit 1
}

java_major() {
  java -version 2>&1 | awk -F'"' '/version/ {split($2, v, "."); print (v[1] == "1" ? v[2] : v[1]); exit}'
}

ensure_java() {
  if command -v java >/dev/null 2>&1 && [ "$(java_major)" -ge 17 ] 2>/dev/null; then return 0; fi
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    say "installing Java 17 (openjdk-17-jre-headless) for Spark"
    apt-get update -qq && apt-get install -y -qq openjdk-17-jre-headless >/dev/null
  else
    say "Spark needs Java 17 or 21: install it (Debian/Ubuntu: sudo apt-get install openjdk-17-jre-headless;"
    say "macOS: brew install openjdk@17) and retry"
    exit 1
  fi
}

ensure_venv() {
  local stamp=.venv/.panes-installed
  local want
  want=$(cat pyproject.toml | cksum)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then return 0; fi
  [ -x .venv/bin/python ] || { say "creating .venv"; "$(find_python)" -m venv .venv; }
  say "installing pinned packages into .venv (first run takes a few minutes)"
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q -e ".[dev]"
  echo "$want" > "$stamp"
}

ensure_maven() {
  if command -v mvn >/dev/null 2>&1; then return 0; fi
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    say "installing Maven (Debian's maven) to fetch the Delta and S3 jars"
    apt-get update -qq && apt-get install -y -qq maven >/dev/null
  fi
}

ensure_jars() {
  # Delta's writer and Hadoop's S3 connector, pinned in jobs/runtime/jvm_packages.py, into ~/.m2 (once).
  .venv/bin/python -m jobs.runtime.jvm_packages || exit 1
}

ensure_class_archive() {
  # The classes a driver loads, archived once so that every job's JVM starts faster
  # (jobs/runtime/class_archive.py); without it jobs run as before, only slower to start.
  .venv/bin/python -m jobs.runtime.spark_session --archive-classes || say "no class archive: jobs start slower"
}

setup() { ensure_java; ensure_venv; ensure_maven; ensure_jars; ensure_class_archive; }

# The Dagster instance: $DAGSTER_HOME (./.dagster_home by default) with panes' dagster.yaml
# (run and pool limits for one machine, instance/dagster.yaml) unless it has one of its own.
ensure_instance() {
  export DAGSTER_HOME="${DAGSTER_HOME:-$PWD/.dagster_home}"
  mkdir -p "$DAGSTER_HOME"
  if [ ! -f "$DAGSTER_HOME/dagster.yaml" ]; then
    cp instance/dagster.yaml "$DAGSTER_HOME/dagster.yaml"
  elif ! cmp -s instance/dagster.yaml "$DAGSTER_HOME/dagster.yaml"; then
    say "using $DAGSTER_HOME/dagster.yaml (differs from instance/dagster.yaml)"
  fi
}

command=${1:-help}
[ $# -gt 0 ] && shift
case "$command" in
  setup) setup ;;
  demo)  setup; ensure_instance; exec .venv/bin/python -m orchestration.demo "$@" ;;
  # Two pytest processes (pytest-xdist): one Spark session leaves a core idle while the driver
  # plans and Delta commits. Units of work and their order: tests/conftest.py (HEAVY), kept
  # by --no-loadscope-reorder. PANES_TEST_WORKERS=0: one process.
  test)  setup; exec .venv/bin/python -m pytest -n "${PANES_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder "$@" ;;
  # dg is Dagster's current command line (dagster dev points to it); pyproject.toml's [tool.dg]
  # makes this folder its project. The filter hides a preview warning of Dagster's own classes.
  dev)   setup; ensure_instance; export VIRTUAL_ENV="$PWD/.venv" PATH="$PWD/.venv/bin:$PATH"
         export PYTHONWARNINGS="${PYTHONWARNINGS:-ignore:Class \`SparkDeclarativePipelineScaffolder\`}"
         exec .venv/bin/dg dev "$@" ;;
  # The docs need the packages only (the reference pages import the code, never start Spark).
  # NO_MKDOCS_2_WARNING: mkdocs-material's banner about its end of life, printed on every build.
  docs)  ensure_venv; export NO_MKDOCS_2_WARNING=1
         .venv/bin/mkdocs build --strict --site-dir site
         exec .venv/bin/mkdocs serve --dev-addr 127.0.0.1:8000 "$@" ;;
  *) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; [ "$command" = help ] || exit 2 ;;
esac
