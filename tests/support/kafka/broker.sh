#!/usr/bin/env bash
# Starts and stops a real Apache Kafka 4.x cluster (KRaft) on loopback for the tests.
#
#   broker.sh start --dir DIR [--nodes 1|3] [--topic name:partitions[:replication]]...
#                   [--auto-create] [--lifetime SECONDS] [--security]
#   broker.sh stop --dir DIR
#   broker.sh kill-node --dir DIR --node N [--signal KILL|TERM]
#   broker.sh start-node --dir DIR --node N
#   broker.sh create-topic --dir DIR --topic name:partitions[:replication]...
#   broker.sh status --dir DIR
#
# Every node is a combined broker+controller; with 3 nodes the controllers form a 3-voter
# quorum. Ports are free loopback ports picked at start and kept for the cluster's life, so a
# node restarted by start-node listens on the same port with the same data directory.
#
# Files in DIR: bootstrap (host:port[,host:port...]), nodes (count), nodeN/{pid,port,
# controller_port,server.properties,server.log,stdout.log,data/}, tools.log, watchdog.pid.
# Every node also has a PROXIED listener on nodeN/proxied_port that advertises
# 127.0.0.1:nodeN/proxy_port, where a test's fault proxy (tests/support/fault_proxy.h) may
# listen and forward to proxied_port: a client bootstrapped at proxy_bootstrap then reaches
# every broker through the proxy. DIR/proxy_map lists "proxy_port proxied_port" per node.
# `start` first stops whatever an earlier run left in DIR. `stop` always kills every JVM it
# started (TERM, then KILL after a grace period) and removes the data, keeping the logs.
# A watchdog kills the cluster after --lifetime seconds (default 3600) should `stop` never run.
#
# --security adds, on every node, listeners with TLS and SASL (ports in nodeN/<name>_port):
#   ssl         SSL, the broker certificate for 127.0.0.1 and localhost (signed by DIR/tls/ca.pem)
#   badhost     SSL, a certificate from the same CA for wrong.invalid only (hostname mismatch)
#   mtls        SSL, client certificates required (DIR/tls/client-keystore.pem)
#   sasl        SASL_PLAINTEXT with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512
#   sasl_ssl    SASL_SSL with the same mechanisms
#   reauth      SASL_PLAINTEXT with connections.max.reauth.ms=5000 (KIP-368 re-authentication)
# The certificates are made with openssl at start: DIR/tls/ca.pem (trust this), wrong-ca.pem
# (an unrelated CA), client-keystore.pem (encrypted key + certificate; key password in
# DIR/tls/key_password). SASL user: DIR/tls/sasl_user / sasl_password (PLAIN from the JAAS
# config, SCRAM credentials created by `kafka-storage format --add-scram`).
#
# Environment: SW_KAFKA_LIBS (jar dir; default: the output of scripts/fetch-kafka.sh),
# SW_KAFKA_JVM_OPTS (replaces the default JVM flags), SW_KAFKA_START_TIMEOUT (default 120 s:
# a loaded machine; the --security listeners add a few seconds).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
start_timeout=${SW_KAFKA_START_TIMEOUT:-120}
jvm_opts=${SW_KAFKA_JVM_OPTS:-"-Xmx512m -Xms64m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData -Xss512k -Djava.awt.headless=true"}

die() {
    echo "broker.sh: ERROR: $*" >&2
    exit 1
}
log() { echo "broker.sh: $*" >&2; }

usage() {
    sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

# --- options ---------------------------------------------------------------------------------
cmd=${1:-}
[ -n "$cmd" ] || usage
shift
dir="" nodes=1 node="" signal=KILL auto_create=false lifetime=3600 security=false
topics=()
while [ $# -gt 0 ]; do
    case "$1" in
    --dir) dir=${2:?--dir needs a value}; shift 2 ;;
    --nodes) nodes=${2:?--nodes needs a value}; shift 2 ;;
    --node) node=${2:?--node needs a value}; shift 2 ;;
    --topic) topics+=("${2:?--topic needs name:partitions}"); shift 2 ;;
    --signal) signal=${2:?--signal needs KILL or TERM}; shift 2 ;;
    --auto-create) auto_create=true; shift ;;
    --security) security=true; shift ;;
    --lifetime) lifetime=${2:?--lifetime needs seconds}; shift 2 ;;
    -h | --help) usage ;;
    *) die "unknown option '$1' (see broker.sh --help)" ;;
    esac
done
[ -n "$dir" ] || die "$cmd: --dir DIR is required"
case "$nodes" in 1 | 3) ;; *) die "--nodes $nodes: only 1 or 3 nodes are supported" ;; esac
case "$signal" in KILL | TERM) ;; *) die "--signal $signal: use KILL or TERM" ;; esac
[[ "$lifetime" =~ ^[0-9]+$ ]] || die "--lifetime $lifetime: not a number of seconds"
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

# --- helpers ---------------------------------------------------------------------------------
libs() {
    if [ -n "${SW_KAFKA_LIBS:-}" ]; then
        [ -d "$SW_KAFKA_LIBS" ] || die "SW_KAFKA_LIBS=$SW_KAFKA_LIBS is not a directory"
        echo "$SW_KAFKA_LIBS"
    else
        "$root/scripts/fetch-kafka.sh" || die "cannot get the Kafka jars (scripts/fetch-kafka.sh)"
    fi
}

# True when PID is alive and is a JVM of this cluster (its command line names DIR), so that a
# recycled PID of an unrelated process is never signalled.
is_our_jvm() {
    local pid=$1
    [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "-Dsw.kafka.dir=$dir " 2>/dev/null
}

node_pid() { cat "$dir/node$1/pid" 2>/dev/null || true; }

# A loopback port nobody listens on, below the ephemeral range (32768+) so that no client
# socket takes it while a killed node is down. Ports already given out in this run are skipped.
taken_ports=" "
free_port() {
    local p tries=0
    while [ $tries -lt 200 ]; do
        tries=$((tries + 1))
        p=$((20000 + RANDOM % 12000))
        case "$taken_ports" in *" $p "*) continue ;; esac
        # /proc/net/tcp lists local ports in hex; skip any socket bound to p in any state.
        if grep -qi ":$(printf '%04X' "$p") " /proc/net/tcp /proc/net/tcp6 2>/dev/null; then
            continue
        fi
        if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then continue; fi
        taken_ports="$taken_ports$p "
        echo "$p"
        return 0
    done
    die "no free loopback port found after 200 tries"
}

# --security: listener name:security protocol (see the header).
secure_listeners="ssl:SSL badhost:SSL mtls:SSL sasl:SASL_PLAINTEXT sasl_ssl:SASL_SSL reauth:SASL_PLAINTEXT"
sasl_user=alice sasl_password=alice-pw-9f3e key_password=test-key-pw-51c2

# One leaf certificate signed by DIR/tls/ca.pem: name subject-cn subjectAltName. The PKCS#8
# key is encrypted with key_password, as the broker's PEM key store requires (PBES1: the
# JDK 17 cannot read PBES2 keys).
make_leaf() {
    local t="$dir/tls"
    printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth,clientAuth\n' \
        "$3" >"$t/$1.ext"
    openssl req -newkey rsa:2048 -nodes -keyout "$t/$1.raw.key" -out "$t/$1.csr" \
        -subj "/CN=$2" >>"$dir/tools.log" 2>&1 &&
        openssl x509 -req -in "$t/$1.csr" -CA "$t/ca.pem" -CAkey "$t/ca.key" \
            -CAcreateserial -days 3 -extfile "$t/$1.ext" -out "$t/$1.pem" \
            >>"$dir/tools.log" 2>&1 &&
        openssl pkcs8 -topk8 -v1 PBE-SHA1-3DES -in "$t/$1.raw.key" -out "$t/$1.key" \
            -passout "pass:$key_password" >>"$dir/tools.log" 2>&1 ||
        fail_start "openssl: making the $1 certificate failed"
    cat "$t/$1.key" "$t/$1.pem" >"$t/$1-keystore.pem"
    rm -f "$t/$1.raw.key" "$t/$1.csr" "$t/$1.ext"
}

# The CA, a wrong CA, the broker's, the wrong host's and a client's certificate.
make_certs() {
    local t="$dir/tls" name
    rm -rf "$t"
    mkdir -p "$t"
    command -v openssl >/dev/null || fail_start "openssl not found"
    for name in ca wrong-ca; do
        openssl req -x509 -newkey rsa:2048 -nodes -keyout "$t/$name.key" -out "$t/$name.pem" \
            -days 3 -subj "/CN=skywalking-c test $name" >>"$dir/tools.log" 2>&1 ||
            fail_start "openssl: making $name failed"
    done
    make_leaf broker localhost "IP:127.0.0.1,DNS:localhost"
    make_leaf badhost wrong.invalid "DNS:wrong.invalid"
    make_leaf client skywalking-c-client "DNS:client.invalid"
    echo "$key_password" >"$t/key_password"
    echo "$sasl_user" >"$t/sasl_user"
    echo "$sasl_password" >"$t/sasl_password"
}

# The server.properties lines of the --security listeners.
security_config() {
    local t="$dir/tls" l name mech
    cat <<EOF
ssl.keystore.type=PEM
ssl.keystore.location=$t/broker-keystore.pem
ssl.key.password=$key_password
ssl.truststore.type=PEM
ssl.truststore.location=$t/ca.pem
listener.name.badhost.ssl.keystore.location=$t/badhost-keystore.pem
listener.name.mtls.ssl.client.auth=required
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
EOF
    for l in $secure_listeners; do
        name=${l%%:*}
        case "${l##*:}" in SASL_*) ;; *) continue ;; esac
        echo "listener.name.$name.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_$sasl_user=\"$sasl_password\";"
        for mech in scram-sha-256 scram-sha-512; do
            echo "listener.name.$name.$mech.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;"
        done
        if [ "$name" = reauth ]; then
            for mech in plain scram-sha-256 scram-sha-512; do
                echo "listener.name.reauth.$mech.connections.max.reauth.ms=5000"
            done
        fi
    done
}

write_config() { # node_id n_nodes voters
    local id=$1 n=$2 voters=$3 rf=$(($2 < 3 ? $2 : 3)) minisr=1
    [ "$rf" -ge 3 ] && minisr=2
    local nd="$dir/node$id" l name extra_l="" extra_m=""
    if $security; then
        for l in $secure_listeners; do
            name=${l%%:*}
            extra_l="$extra_l,${name^^}://127.0.0.1:$(cat "$nd/${name}_port")"
            extra_m="$extra_m,${name^^}:${l##*:}"
        done
    fi
    cat >"$nd/server.properties" <<EOF
# Written by tests/support/kafka/broker.sh for a throw-away test cluster.
process.roles=broker,controller
node.id=$id
controller.quorum.voters=$voters
listeners=PLAINTEXT://127.0.0.1:$(cat "$nd/port"),CONTROLLER://127.0.0.1:$(cat "$nd/controller_port"),PROXIED://127.0.0.1:$(cat "$nd/proxied_port")$extra_l
advertised.listeners=PLAINTEXT://127.0.0.1:$(cat "$nd/port"),PROXIED://127.0.0.1:$(cat "$nd/proxy_port")$extra_l
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,PROXIED:PLAINTEXT$extra_m
log.dirs=$nd/data
auto.create.topics.enable=$auto_create
num.partitions=1
default.replication.factor=$rf
offsets.topic.replication.factor=$rf
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$minisr
transaction.state.log.num.partitions=4
share.coordinator.state.topic.replication.factor=$rf
share.coordinator.state.topic.min.isr=$minisr
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=4
num.recovery.threads.per.data.dir=1
# Fast failure detection for leader-change tests.
broker.heartbeat.interval.ms=500
broker.session.timeout.ms=3000
controlled.shutdown.enable=true
EOF
    if $security; then security_config >>"$nd/server.properties"; fi
}

spawn_node() { # node_id
    local id=$1 nd="$dir/node$1" L
    L=$(libs)
    # shellcheck disable=SC2086 # jvm_opts is a list of flags
    java $jvm_opts -Dsw.kafka.dir="$dir" -Dsw.kafka.log="$nd/server.log" \
        -Dlog4j2.configurationFile="$here/log4j2.properties" \
        -cp "$L/*" kafka.Kafka "$nd/server.properties" </dev/null >>"$nd/stdout.log" 2>&1 &
    echo $! >"$nd/pid"
}

tail_logs() {
    local f
    # The brokers' own logs last: they are the likeliest to say what went wrong.
    for f in "$dir"/tools.log "$dir"/node*/stdout.log "$dir"/node*/server.log; do
        [ -s "$f" ] || continue
        echo "----- last lines of $f -----" >&2
        tail -n 30 "$f" | cut -c1-400 >&2
    done
}

# Fails the command with the logs' tails. During `start` the half-started cluster is stopped
# too; other commands (start-node, create-topic) leave the running nodes alone.
starting=false
fail_start() {
    log "$cmd failed: $*"
    tail_logs
    if $starting; then stop_all; fi
    exit 1
}

# Number of brokers that answer a metadata request at the bootstrap list (0 when none).
broker_count() {
    local out
    out=$(kcat -L -b "$(cat "$dir/bootstrap")" -m 3 2>/dev/null) || { echo 0; return; }
    sed -n 's/^ *\([0-9]\+\) brokers:.*/\1/p' <<<"$out" | head -n 1
}

# Waits until `cond` succeeds, checking every 0.2 s that the node PIDs are alive. Bounded.
wait_for() { # description timeout_s cond...
    local what=$1 timeout=$2 deadline i pid
    shift 2
    deadline=$((SECONDS + timeout))
    while ! "$@"; do
        for i in $(seq 1 "$(cat "$dir/nodes")"); do
            [ -f "$dir/node$i/down" ] && continue
            pid=$(node_pid "$i")
            is_our_jvm "$pid" || fail_start "node $i (pid $pid) exited while waiting for $what"
        done
        [ $SECONDS -lt $deadline ] || fail_start "timed out after ${timeout}s waiting for $what"
        sleep 0.2
    done
}

brokers_are() { [ "$(broker_count)" = "$1" ]; }

# True when every one of the topic's partitions has a leader.
topic_has_leaders() { # name partitions
    local out n
    out=$(kcat -L -b "$(cat "$dir/bootstrap")" -m 3 -t "$1" 2>/dev/null) || return 1
    grep -q "Err\|error" <<<"$out" && return 1
    n=$(grep -c "partition [0-9]\+, leader [0-9]\+," <<<"$out" || true)
    [ "$n" = "$2" ]
}

# Checks every --topic spec against a cluster of $1 nodes, before anything is started.
validate_topics() {
    local spec name parts rf
    for spec in "${topics[@]}"; do
        IFS=: read -r name parts rf <<<"$spec"
        [[ "$name" =~ ^[A-Za-z0-9._-]{1,249}$ ]] && [[ "$parts" =~ ^[1-9][0-9]{0,3}$ ]] ||
            die "--topic '$spec': expected name:partitions[:replication] with a valid topic name and 1..9999 partitions"
        rf=${rf:-$(($1 < 3 ? $1 : 3))}
        [[ "$rf" =~ ^[1-9]$ ]] && [ "$rf" -le "$1" ] ||
            die "--topic '$spec': replication factor $rf must be 1..$1 on this $1-node cluster"
    done
}

# Creates every --topic (validated): one kafka-topics JVM per topic (about 1 s each), all
# started at once, then waits until every partition has a leader.
create_topics() {
    local spec name parts rf max L i
    local -a names=() counts=() pids=()
    max=$(cat "$dir/nodes")
    L=$(libs)
    for spec in "${topics[@]}"; do
        IFS=: read -r name parts rf <<<"$spec"
        rf=${rf:-$((max < 3 ? max : 3))}
        java -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Dsw.kafka.log="$dir/tools.log" \
            -Dlog4j2.configurationFile="$here/log4j2.properties" -cp "$L/*" \
            org.apache.kafka.tools.TopicCommand --bootstrap-server "$(cat "$dir/bootstrap")" \
            --create --if-not-exists --topic "$name" --partitions "$parts" \
            --replication-factor "$rf" </dev/null >>"$dir/tools.log" 2>&1 &
        pids+=($!) names+=("$name") counts+=("$parts:$rf")
    done
    for i in "${!pids[@]}"; do
        wait "${pids[$i]}" || fail_start "creating topic ${names[$i]} failed"
    done
    for i in "${!names[@]}"; do
        wait_for "leaders of topic ${names[$i]}" "$start_timeout" \
            topic_has_leaders "${names[$i]}" "${counts[$i]%%:*}"
        log "topic ${names[$i]}: ${counts[$i]%%:*} partitions, replication ${counts[$i]##*:}"
    done
}

stop_all() {
    local i pid n deadline child
    if [ -f "$dir/watchdog.pid" ]; then
        pid=$(cat "$dir/watchdog.pid")
        # Only the watchdog of this DIR, recognised by its environment, is signalled.
        if [ -r "/proc/$pid/environ" ] && tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null |
            grep -qxF "SW_KAFKA_WATCHDOG_DIR=$dir"; then
            # Its sleeping child first, so that no orphaned `sleep` outlives it.
            for child in $(cat "/proc/$pid/task/$pid/children" 2>/dev/null); do
                kill -TERM "$child" 2>/dev/null || true
            done
            kill -TERM "$pid" 2>/dev/null || true
        fi
        rm -f "$dir/watchdog.pid"
    fi
    n=$(cat "$dir/nodes" 2>/dev/null || echo 0)
    for i in $(seq 1 "$n"); do
        pid=$(node_pid "$i")
        if is_our_jvm "$pid"; then kill -TERM "$pid" 2>/dev/null || true; fi
    done
    deadline=$((SECONDS + 15))
    for i in $(seq 1 "$n"); do
        pid=$(node_pid "$i")
        while is_our_jvm "$pid" && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
        if is_our_jvm "$pid"; then
            log "node $i (pid $pid) ignored TERM for 15s; killing it"
            kill -KILL "$pid" 2>/dev/null || true
            while is_our_jvm "$pid"; do sleep 0.05; done
        fi
        rm -f "$dir/node$i/pid"
        rm -rf "$dir/node$i/data"
    done
}

start_watchdog() {
    # Runs detached from the caller's stdout (ctest waits for its pipes to close). Kills the
    # cluster's JVMs when the lifetime is over. Identified by SW_KAFKA_WATCHDOG_DIR.
    SW_KAFKA_WATCHDOG_DIR="$dir" nohup bash -c '
        sleep "$1" & wait $!
        for f in "$2"/node*/pid; do
            p=$(cat "$f" 2>/dev/null) || continue
            tr "\0" " " <"/proc/$p/cmdline" 2>/dev/null | grep -qF -- "-Dsw.kafka.dir=$2 " &&
                kill -KILL "$p" && echo "watchdog: lifetime over, killed pid $p" >>"$2/watchdog.log"
        done' sw-kafka-watchdog "$lifetime" "$dir" </dev/null >/dev/null 2>&1 &
    echo $! >"$dir/watchdog.pid"
}

# --- commands --------------------------------------------------------------------------------
cmd_start() {
    local i l voters="" cluster_id L t0 bs="" pbs=""
    command -v java >/dev/null || die "java not found (scripts/install-deps.sh)"
    command -v kcat >/dev/null || die "kcat not found (scripts/install-deps.sh)"
    validate_topics "$nodes"
    starting=true
    t0=$SECONDS
    [ -f "$dir/nodes" ] && stop_all
    rm -rf "$dir"/node* "$dir/bootstrap" "$dir/nodes" "$dir/tools.log" "$dir/watchdog.log" \
        "$dir/proxy_map" "$dir/proxy_bootstrap"
    L=$(libs)
    echo "$nodes" >"$dir/nodes"
    for i in $(seq 1 "$nodes"); do
        mkdir -p "$dir/node$i"
        free_port >"$dir/node$i/port"
        free_port >"$dir/node$i/controller_port"
        voters="$voters${voters:+,}$i@127.0.0.1:$(cat "$dir/node$i/controller_port")"
        bs="$bs${bs:+,}127.0.0.1:$(cat "$dir/node$i/port")"
        free_port >"$dir/node$i/proxied_port"
        free_port >"$dir/node$i/proxy_port"
        echo "$(cat "$dir/node$i/proxy_port") $(cat "$dir/node$i/proxied_port")" >>"$dir/proxy_map"
        pbs="$pbs${pbs:+,}127.0.0.1:$(cat "$dir/node$i/proxy_port")"
        if $security; then
            for l in $secure_listeners; do free_port >"$dir/node$i/${l%%:*}_port"; done
        fi
    done
    if $security; then make_certs; fi
    echo "$pbs" >"$dir/proxy_bootstrap"
    cluster_id=$(java -cp "$L/*" kafka.tools.StorageTool random-uuid 2>>"$dir/tools.log") ||
        fail_start "kafka-storage random-uuid failed"
    local -a scram=()
    if $security; then
        scram=(--add-scram "SCRAM-SHA-256=[name=$sasl_user,password=$sasl_password]"
            --add-scram "SCRAM-SHA-512=[name=$sasl_user,password=$sasl_password]")
    fi
    for i in $(seq 1 "$nodes"); do
        write_config "$i" "$nodes" "$voters"
        java -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Dsw.kafka.log="$dir/tools.log" \
            -Dlog4j2.configurationFile="$here/log4j2.properties" -cp "$L/*" \
            kafka.tools.StorageTool format -t "$cluster_id" -c "$dir/node$i/server.properties" \
            ${scram[@]+"${scram[@]}"} \
            >>"$dir/tools.log" 2>&1 || fail_start "formatting the storage of node $i failed"
    done
    echo "$bs" >"$dir/bootstrap"
    for i in $(seq 1 "$nodes"); do spawn_node "$i"; done
    start_watchdog
    wait_for "$nodes broker(s) to answer at $bs" "$start_timeout" brokers_are "$nodes"
    create_topics
    log "cluster of $nodes node(s) up at $bs in $((SECONDS - t0))s (dir $dir)"
    echo "$bs"
}

cmd_kill_node() {
    local pid
    [[ "$node" =~ ^[1-9]$ ]] && [ -d "$dir/node$node" ] || die "kill-node: no node '$node' in $dir"
    pid=$(node_pid "$node")
    is_our_jvm "$pid" || die "kill-node: node $node is not running"
    kill -"$signal" "$pid"
    local deadline=$((SECONDS + 30))
    while is_our_jvm "$pid"; do
        [ $SECONDS -lt $deadline ] || die "kill-node: node $node (pid $pid) still alive after 30s"
        sleep 0.05
    done
    touch "$dir/node$node/down"
    log "node $node (pid $pid) stopped with SIG$signal"
}

# True when node $node itself answers a metadata request and lists itself as a live broker.
node_is_listed() {
    kcat -L -b "127.0.0.1:$(cat "$dir/node$node/port")" -m 3 2>/dev/null |
        grep -q "^ *broker $node at "
}

# True when every partition of every topic has all its replicas in sync again.
fully_replicated() {
    local out
    out=$(kcat -L -b "$(cat "$dir/bootstrap")" -m 3 2>/dev/null) || return 1
    awk '/partition [0-9]+, leader/ {
            r = $0; sub(/.*replicas: /, "", r); sub(/, isrs:.*/, "", r)
            i = $0; sub(/.*isrs: /, "", i); sub(/[ ,]*$/, "", i)
            if (split(r, a, ",") != split(i, b, ",")) bad = 1
         }
         END { exit bad }' <<<"$out"
}

cmd_start_node() {
    [[ "$node" =~ ^[1-9]$ ]] && [ -d "$dir/node$node" ] || die "start-node: no node '$node' in $dir"
    is_our_jvm "$(node_pid "$node")" && die "start-node: node $node is already running"
    rm -f "$dir/node$node/down"
    spawn_node "$node"
    wait_for "node $node to rejoin" "$start_timeout" node_is_listed
    wait_for "node $node to be back in every ISR" "$start_timeout" fully_replicated
    log "node $node restarted on port $(cat "$dir/node$node/port")"
}

cmd_status() {
    local i pid n
    n=$(cat "$dir/nodes" 2>/dev/null) || die "status: no cluster in $dir"
    echo "bootstrap $(cat "$dir/bootstrap")"
    for i in $(seq 1 "$n"); do
        pid=$(node_pid "$i")
        if is_our_jvm "$pid"; then
            echo "node $i up pid $pid port $(cat "$dir/node$i/port")"
        else
            echo "node $i down port $(cat "$dir/node$i/port")"
        fi
    done
}

case "$cmd" in
start) cmd_start ;;
stop)
    stop_all
    log "stopped (logs kept in $dir)"
    ;;
kill-node) cmd_kill_node ;;
start-node) cmd_start_node ;;
create-topic)
    [ -f "$dir/bootstrap" ] || die "create-topic: no cluster in $dir"
    [ ${#topics[@]} -gt 0 ] || die "create-topic: give at least one --topic name:partitions"
    validate_topics "$(cat "$dir/nodes")"
    create_topics
    ;;
status) cmd_status ;;
*) die "unknown command '$cmd' (start, stop, kill-node, start-node, create-topic, status)" ;;
esac
