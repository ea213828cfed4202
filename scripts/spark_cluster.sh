#!/usr/bin/env bash
# A real Spark standalone cluster on this machine: one master and N workers on 127.0.0.1, started
# with the Master and Worker classes the pyspark distribution ships (its pip package has no
# sbin/start-master.sh). Ports, logs, pid files and work directories live under $CLUSTER_DIR.
#
#   scripts/spark_cluster.sh start|stop|status
#
# Settings (environment): CLUSTER_DIR (default data/spark-cluster), SPARK_CLUSTER_PORT (7077),
# SPARK_CLUSTER_WORKERS (2), SPARK_WORKER_CORES (1), SPARK_WORKER_MEMORY (2g), PYTHON (.venv/bin/python).
set -euo pipefail

CLUSTER_DIR=$(mkdir -p "${CLUSTER_DIR:-data/spark-cluster}" && cd "${CLUSTER_DIR:-data/spark-cluster}" && pwd)
PORT=${SPARK_CLUSTER_PORT:-7077}
WORKERS=${SPARK_CLUSTER_WORKERS:-2}
CORES=${SPARK_WORKER_CORES:-1}
MEMORY=${SPARK_WORKER_MEMORY:-2g}
PYTHON=${PYTHON:-.venv/bin/python}
[[ -x $PYTHON ]] || { echo "spark-cluster: $PYTHON not found: run make setup" >&2; exit 2; }
# the pip package is a whole Spark distribution; its scripts need SPARK_HOME to find their jars
export SPARK_HOME=${SPARK_HOME:-$("$PYTHON" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')}
SPARK_CLASS="$SPARK_HOME/bin/spark-class"
MASTER_URL="spark://127.0.0.1:$PORT"
# Web UIs on loopback only, at ports derived from the master port so two clusters can coexist.
export SPARK_LOCAL_IP=127.0.0.1
export SPARK_LOG_DIR="$CLUSTER_DIR/logs"

pidfile() { echo "$CLUSTER_DIR/$1.pid"; }

alive() { [[ -f $(pidfile "$1") ]] && kill -0 "$(cat "$(pidfile "$1")")" 2>/dev/null; }

launch() {  # name, class, args...
  local name=$1; shift
  if alive "$name"; then echo "$name already running (pid $(cat "$(pidfile "$name")"))"; return; fi
  mkdir -p "$SPARK_LOG_DIR"
  # setsid: the daemon leaves make's process group, so stopping make does not stop the cluster.
  setsid nohup "$SPARK_CLASS" "$@" >"$SPARK_LOG_DIR/$name.out" 2>&1 < /dev/null &
  echo $! >"$(pidfile "$name")"
  echo "$name started (pid $!, log $SPARK_LOG_DIR/$name.out)"
}

wait_for() {  # log file, pattern, what
  for _ in $(seq 1 120); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    sleep 0.5
  done
  echo "spark-cluster: $3 did not come up within 60 s; see $1" >&2
  tail -20 "$1" >&2
  return 1
}

start() {
  launch master org.apache.spark.deploy.master.Master --host 127.0.0.1 --port "$PORT" \
    --webui-port $((PORT + 1000))
  wait_for "$SPARK_LOG_DIR/master.out" "Starting Spark master at" "the master"
  wait_for "$SPARK_LOG_DIR/master.out" "I have been elected leader" "the master"
  for i in $(seq 1 "$WORKERS"); do
    mkdir -p "$CLUSTER_DIR/workdirs/worker-$i"
    launch "worker-$i" org.apache.spark.deploy.worker.Worker --host 127.0.0.1 --cores "$CORES" \
      --memory "$MEMORY" --work-dir "$CLUSTER_DIR/workdirs/worker-$i" --webui-port $((PORT + 1000 + i)) \
      "$MASTER_URL"
  done
  for i in $(seq 1 "$WORKERS"); do
    wait_for "$SPARK_LOG_DIR/worker-$i.out" "Successfully registered with master" "worker-$i"
  done
  echo "$MASTER_URL" >"$CLUSTER_DIR/master-url"
  echo "Spark standalone cluster up: $MASTER_URL (UI http://127.0.0.1:$((PORT + 1000)))"
  echo "run: make clean-dedup SPARK_MASTER=$MASTER_URL"
}

stop() {
  local name pid
  for f in "$CLUSTER_DIR"/worker-*.pid "$CLUSTER_DIR"/master.pid; do
    [[ -f $f ]] || continue
    name=$(basename "$f" .pid); pid=$(cat "$f")
    if kill -0 "$pid" 2>/dev/null; then
      # the worker's executors are its children: stop the whole session the daemon leads
      kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
      kill -KILL -- "-$pid" 2>/dev/null || true
      echo "$name stopped"
    fi
    rm -f "$f"
  done
}

status() {
  local f
  for f in "$CLUSTER_DIR"/master.pid "$CLUSTER_DIR"/worker-*.pid; do
    [[ -f $f ]] || continue
    if kill -0 "$(cat "$f")" 2>/dev/null; then echo "$(basename "$f" .pid) running (pid $(cat "$f"))"
    else echo "$(basename "$f" .pid) dead"; fi
  done
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
