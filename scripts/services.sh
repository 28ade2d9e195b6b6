#!/usr/bin/env bash
# Makes sure MariaDB/MySQL, Redis and RabbitMQ answer on their default local ports.
# Starts any that is installed but stopped (the same commands this project's machines use);
# says how to get any that is missing. Shared by `npm run demo`, `npm test` and .ci/run.
set -u

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_port() { # name port seconds
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    port_open "$2" && return 0
    sleep 0.1
  done
  echo "services: $1 did not open port $2 within $3 s" >&2
  return 1
}

missing=()
[ "${SECKILL_SKIP_SERVICES:-}" = 1 ] && exit 0

ensure() { # name port binary start-command...
  local name=$1 port=$2 bin=$3
  shift 3
  if port_open "$port"; then return 0; fi
  if ! command -v "$bin" >/dev/null 2>&1 && [ ! -x "$bin" ]; then
    missing+=("$name")
    return 0
  fi
  echo "services: starting $name" >&2
  "$@" >/dev/null 2>&1 || true
  wait_port "$name" "$port" 60
}

ensure MariaDB 3306 /usr/sbin/mariadbd \
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
ensure Redis 6379 redis-server \
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
  --dir /var/lib/redis --logfile /var/log/redis/ci.log
ensure RabbitMQ 5672 rabbitmq-server rabbitmq-server -detached

# RabbitMQ opens 5672 before it accepts logins; wait until it really serves.
if port_open 5672 && command -v rabbitmq-diagnostics >/dev/null 2>&1; then
  for _ in $(seq 1 60); do
    rabbitmq-diagnostics -q check_running >/dev/null 2>&1 && break
    sleep 1
  done
fi

if [ ${#missing[@]} -gt 0 ]; then
  cat >&2 <<MSG
services: not installed here: ${missing[*]}.
  Debian/Ubuntu: sudo apt-get update && sudo apt-get install -y mariadb-server redis-server rabbitmq-server
  With Docker:   docker compose -f docker/compose.yml up -d
  Or point DATABASE_URL, REDIS_URL and RABBITMQ_URL (.env) at servers you already run.
MSG
  exit 1
fi
exit 0
