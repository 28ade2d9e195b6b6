// A RabbitMQ cluster of our own on this machine, from the installed rabbitmq-server: each node
// with its own name, ports, data and log directories, and one Erlang cookie of the cluster's, all
// under one directory; the machine's own broker (rabbit@…, 5672) is never touched. Nodes are
// started, killed and stopped by the pid files they write. Used by `scripts/rabbitmq-cluster.ts`
// (the command) and by the tests (test/rabbitmq-cluster.e2e-spec.ts).
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';

import { ScriptError } from './errors.js';
import { portIsFree } from './ports.js';

/** The distribution-aware scripts themselves: Debian's /usr/sbin wrappers switch to the rabbitmq user. */
const RABBIT_BIN = process.env.RABBITMQ_BIN_DIR ?? '/usr/lib/rabbitmq/bin';
/** AMQP ports from here (below the ephemeral range and the other private servers' ranges). */
const FIRST_PORT = 13_000;
const LAST_PORT = 14_900;
/** A node's Erlang distribution port: its AMQP port + this. */
const DIST_OFFSET = 1_000;
const STARTUP_TIMEOUT_MS = 90_000;

export interface RabbitNode {
  /** Its Erlang node name, e.g. `seckill-13400-b@localhost`. */
  name: string;
  port: number;
  distPort: number;
  dir: string;
}

export interface RabbitCluster {
  dir: string;
  nodes: RabbitNode[];
}

/** `amqp://guest:guest@127.0.0.1:<port>/`, one per node, in the nodes' order. */
export function clusterUrls(cluster: RabbitCluster): string[] {
  return cluster.nodes.map((node) => `amqp://guest:guest@127.0.0.1:${node.port}/`);
}

/** The environment the server and the CLI tools of one node run with. */
function nodeEnv(cluster: RabbitCluster, node: RabbitNode): NodeJS.ProcessEnv {
  return {
    ...process.env,
    // The cookie is read from $HOME/.erlang.cookie by the node and by rabbitmqctl alike.
    HOME: cluster.dir,
    RABBITMQ_NODENAME: node.name,
    RABBITMQ_NODE_IP_ADDRESS: '127.0.0.1',
    RABBITMQ_NODE_PORT: String(node.port),
    RABBITMQ_DIST_PORT: String(node.distPort),
    RABBITMQ_MNESIA_BASE: join(node.dir, 'mnesia'),
    RABBITMQ_LOG_BASE: join(node.dir, 'log'),
    RABBITMQ_PID_FILE: join(node.dir, 'node.pid'),
    // None of the machine's files: its config, its env file and its plugins (the management
    // plugin would want port 15672 on every node).
    RABBITMQ_CONFIG_FILE: join(cluster.dir, 'rabbitmq.conf'),
    RABBITMQ_ADVANCED_CONFIG_FILE: join(cluster.dir, 'advanced.config'),
    RABBITMQ_CONF_ENV_FILE: join(cluster.dir, 'rabbitmq-env.conf'),
    RABBITMQ_ENABLED_PLUGINS_FILE: join(cluster.dir, 'enabled_plugins'),
  };
}

async function ctl(cluster: RabbitCluster, node: RabbitNode, args: string[], timeoutMs = 60_000) {
  const { stdout } = await promisify(execFile)(
    join(RABBIT_BIN, 'rabbitmqctl'),
    ['-n', node.name, ...args],
    { env: nodeEnv(cluster, node), timeout: timeoutMs },
  );
  return stdout;
}

/** `count` consecutive free AMQP ports whose distribution ports are free too. */
async function freePorts(count: number): Promise<number[]> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = FIRST_PORT + Math.floor(Math.random() * (LAST_PORT - FIRST_PORT - count));
    const ports = Array.from({ length: count }, (_, i) => base + i);
    const free = await Promise.all(
      ports.flatMap((port) => [portIsFree(port), portIsFree(port + DIST_OFFSET)]),
    );
    if (free.every(Boolean)) return ports;
  }
  throw new ScriptError(`no ${count} free ports for a private RabbitMQ cluster`);
}

/** The node's OS pid, from the pid file it writes once booted; null when there is none. */
export function nodePid(node: RabbitNode): number | null {
  const file = join(node.dir, 'node.pid');
  if (!existsSync(file)) return null;
  const pid = Number(readFileSync(file, 'utf8').trim());
  return Number.isInteger(pid) && pid > 0 ? pid : null;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Starts one node's server (a fresh one, or a node killed before: it rejoins its cluster). */
export async function startNode(cluster: RabbitCluster, node: RabbitNode): Promise<void> {
  mkdirSync(join(node.dir, 'log'), { recursive: true });
  rmSync(join(node.dir, 'node.pid'), { force: true });
  const log = openSync(join(node.dir, 'server.out'), 'a');
  const server = spawn(join(RABBIT_BIN, 'rabbitmq-server'), [], {
    env: nodeEnv(cluster, node),
    detached: true,
    stdio: ['ignore', log, log],
  });
  server.unref();
  await awaitNode(cluster, node);
}

/** Waits until the node runs its app (booted, its queues' replicas back). */
export async function awaitNode(cluster: RabbitCluster, node: RabbitNode): Promise<void> {
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  for (;;) {
    try {
      await ctl(cluster, node, ['await_startup', '--timeout', '30'], 35_000);
      return;
    } catch (error) {
      if (Date.now() > deadline) {
        throw new ScriptError(
          `RabbitMQ node ${node.name} did not start: ${(error as Error).message.trim()}`,
        );
      }
      await sleep(500);
    }
  }
}

/** Kills a node's VM outright (SIGKILL by default), as a crash would, and waits until it is gone. */
export async function killNode(node: RabbitNode, signal: NodeJS.Signals = 'SIGKILL') {
  const pid = nodePid(node);
  if (pid === null || !alive(pid)) return;
  process.kill(pid, signal);
  for (let i = 0; i < 200 && alive(pid); i++) await sleep(50);
  if (alive(pid)) throw new ScriptError(`RabbitMQ node ${node.name} (pid ${pid}) did not exit`);
}

/**
 * A cluster of `size` nodes under `dir` (made if missing; must not hold another cluster): the
 * first node is started, then each other one is started and joined to it (stop_app,
 * join_cluster, start_app), as an operator would.
 */
export async function startCluster(dir: string, size = 3): Promise<RabbitCluster> {
  mkdirSync(dir, { recursive: true });
  const ports = await freePorts(size);
  const tag = `seckill-${ports[0]}`;
  const cluster: RabbitCluster = {
    dir,
    nodes: ports.map((port, i) => ({
      name: `${tag}-${String.fromCharCode(97 + i)}@localhost`,
      port,
      distPort: port + DIST_OFFSET,
      dir: join(dir, String.fromCharCode(97 + i)),
    })),
  };
  const cookie = join(dir, '.erlang.cookie');
  writeFileSync(cookie, randomBytes(20).toString('hex').toUpperCase(), { mode: 0o400 });
  writeFileSync(join(dir, 'rabbitmq.conf'), 'log.file.level = warning\n');
  writeFileSync(join(dir, 'advanced.config'), '[].\n');
  writeFileSync(join(dir, 'rabbitmq-env.conf'), '');
  writeFileSync(join(dir, 'enabled_plugins'), '[].\n');
  writeFileSync(join(dir, 'cluster.json'), `${JSON.stringify(cluster, null, 2)}\n`);
  const [first, ...others] = cluster.nodes;
  await startNode(cluster, first);
  for (const node of others) {
    await startNode(cluster, node);
    await ctl(cluster, node, ['stop_app']);
    await ctl(cluster, node, ['join_cluster', first.name]);
    await ctl(cluster, node, ['start_app']);
  }
  return cluster;
}

/** The cluster `startCluster` made under `dir` (its cluster.json). */
export function readCluster(dir: string): RabbitCluster {
  const file = join(dir, 'cluster.json');
  if (!existsSync(file)) throw new ScriptError(`no RabbitMQ cluster of ours in ${dir}`);
  return JSON.parse(readFileSync(file, 'utf8')) as RabbitCluster;
}

/** Stops every node (rabbitmqctl stop; a node that does not stop is killed), then removes `dir`. */
export async function stopCluster(cluster: RabbitCluster): Promise<void> {
  await Promise.all(
    cluster.nodes.map(async (node) => {
      const pid = nodePid(node);
      if (pid === null || !alive(pid)) return;
      await ctl(cluster, node, ['stop'], 30_000).catch(() => undefined);
      for (let i = 0; i < 100 && alive(pid); i++) await sleep(100);
      await killNode(node);
    }),
  );
  rmSync(cluster.dir, { recursive: true, force: true });
}

/** A quorum queue's leader and replicas (node names) now, asked of a running node `via`. */
export async function quorumQueue(
  cluster: RabbitCluster,
  via: RabbitNode,
  queue: string,
): Promise<{ leader: string; members: string[] } | undefined> {
  const out = await ctl(cluster, via, [
    'list_queues',
    '-q',
    '--formatter',
    'json',
    'name',
    'leader',
    'members',
  ]);
  const rows = JSON.parse(out) as { name: string; leader: string; members: string[] }[];
  const row = rows.find((candidate) => candidate.name === queue);
  return row && { leader: row.leader, members: row.members };
}

/** The node that leads a quorum queue now, asked of a running node `via`. */
export async function queueLeader(
  cluster: RabbitCluster,
  via: RabbitNode,
  queue: string,
): Promise<RabbitNode | undefined> {
  const leader = (await quorumQueue(cluster, via, queue))?.leader;
  return cluster.nodes.find((node) => node.name === leader);
}

/** The nodes the cluster has running now, as one running node `via` sees it. */
export async function runningNodes(cluster: RabbitCluster, via: RabbitNode): Promise<string[]> {
  const out = await ctl(cluster, via, ['cluster_status', '--formatter', 'json']);
  return (JSON.parse(out) as { running_nodes: string[] }).running_nodes;
}

/** Makes every node close every client connection (as `rabbitmqctl close_all_connections`). */
export async function closeAllConnections(
  cluster: RabbitCluster,
  via: RabbitNode,
  reason: string,
): Promise<void> {
  await ctl(cluster, via, ['close_all_connections', reason]);
}
