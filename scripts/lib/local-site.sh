#!/usr/bin/env bash
# A local site for the scripts that need one: a mosquitto with dynamic security on a free loopback
# port and an unlockit-server on a SQLite file under $STATE. Sourced by scripts/demo and
# scripts/fuzz-api, with unlockit-server on PATH and STATE set. Whatever a script adds to PIDS (its
# locks, say) is stopped with the site when the script exits.
set -euo pipefail

PIDS=()
local_site_cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap local_site_cleanup EXIT

free_port() {
    local port
    while :; do
        port=$((20000 + RANDOM % 20000))
        (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null || { echo "$port"; return; }
    done
}

# start_local_broker [RUNNER...]: sets BROKER_PORT. The broker's setup runs under RUNNER (the demo's
# `run` shows the command; `quietly` hides its output). With MOSQUITTO_LOG set, mosquitto writes there.
start_local_broker() {
    BROKER_PORT=$(free_port)
    "$@" unlockit-server broker-setup --dir "$STATE/broker" --port "$BROKER_PORT"
    if [[ -n ${MOSQUITTO_LOG:-} ]]; then
        mosquitto -c "$STATE/broker/mosquitto.conf" >"$MOSQUITTO_LOG" 2>&1 &
    else
        mosquitto -c "$STATE/broker/mosquitto.conf" &
    fi
    local broker=$!
    PIDS+=("$broker")
    for _ in $(seq 100); do
        kill -0 "$broker" 2>/dev/null || break
        (echo >"/dev/tcp/127.0.0.1/$BROKER_PORT") 2>/dev/null && return 0
        sleep 0.1
    done
    # Its own log file (log_dest), and where its output went if MOSQUITTO_LOG was set.
    echo "mosquitto did not start on port $BROKER_PORT" >&2
    local log
    for log in "$STATE/broker/mosquitto.log" ${MOSQUITTO_LOG:+"$MOSQUITTO_LOG"}; do
        [[ -s $log ]] || continue
        echo "$log ends:" >&2
        tail -n 20 "$log" >&2
    done
    return 1
}

# start_local_server: the server on $STATE/data, connected to the broker above; exports what the
# server and the CLI read, and sets SERVER (the API) and OPERATIONS (/healthz, /metrics) once
# /healthz answers.
start_local_server() {
    export UNLOCKIT_DATABASE="$STATE/data/unlockit.sqlite"
    export UNLOCKIT_MQTT_URL="mqtt://127.0.0.1:$BROKER_PORT"
    export UNLOCKIT_MQTT_PASSWORD_FILE="$STATE/broker/server-mqtt-password"
    export UNLOCKIT_HTTP_PORT=0 UNLOCKIT_OPERATIONS_PORT=0
    unlockit-server serve --port-file "$STATE/http-port" --operations-port-file "$STATE/operations-port" 2>"$STATE/server.log" &
    local server=$!
    PIDS+=("$server")
    for _ in $(seq 300); do
        kill -0 "$server" 2>/dev/null || break
        if [[ -s "$STATE/http-port" && -s "$STATE/operations-port" ]]; then
            SERVER="http://127.0.0.1:$(cat "$STATE/http-port")"
            OPERATIONS="http://127.0.0.1:$(cat "$STATE/operations-port")"
            curl -fs "$OPERATIONS/healthz" >/dev/null && return 0
        fi
        sleep 0.1
    done
    echo "the server did not become healthy; its log ($STATE/server.log) ends:" >&2
    tail -n 20 "$STATE/server.log" >&2 || true
    return 1
}

quietly() { "$@" >/dev/null; }
