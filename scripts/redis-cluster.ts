// A Redis Cluster on this machine, from the installed redis-server, for trying the service on it
// (docs/scaling.md, "On a Redis Cluster"): three masters, each with --replicas replicas.
//
//   npm run cluster:redis -- start [--replicas 1]   prints the REDIS_CLUSTER_NODES to use
//   npm run cluster:redis -- status                 each node's role and slots
//   npm run cluster:redis -- kill PORT              SIGKILLs a node (a crash); with a replica,
//                                                   the cluster promotes it after the node timeout
//   npm run cluster:redis -- start-node PORT        starts it again (empty; it rejoins)
//   npm run cluster:redis -- stop                   stops every node and removes --dir
//
// Nothing is saved to disk but the nodes' cluster files; everything lives under --dir (default
// /tmp/seckill-redis-cluster). The machine's Redis (6379) is never touched.
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';

import { integerFlag, readFlags } from './lib/args.js';
import { ScriptError, UsageError } from './lib/errors.js';
import { runScript } from './lib/main.js';
import {
  clusterIsOk,
  clusterNodeArgs,
  createCluster,
  freeClusterPorts,
} from './lib/redis-cluster.js';
import { ephemeralRedisArgs } from './lib/redis-server.js';

const USAGE = `usage: npm run cluster:redis -- <start|status|kill PORT|start-node PORT|stop> [--dir DIR] [--replicas N] [--node-timeout MS]

  start            three masters with --replicas replicas each (default 1), under --dir
  status           each node's role and slots
  kill PORT        SIGKILL the node on PORT, as a crash
  start-node PORT  start the node on PORT again (empty; it rejoins the cluster)
  stop             stop every node and remove --dir
  --dir DIR        where the cluster lives (default /tmp/seckill-redis-cluster)
  --node-timeout   cluster-node-timeout in ms (default 5000): how long before a replica takes over`;

interface Options {
  command: 'start' | 'status' | 'kill' | 'start-node' | 'stop';
  port?: number;
  dir: string;
  replicas: number;
  nodeTimeoutMs: number;
}

interface ClusterFile {
  ports: number[];
  nodeTimeoutMs: number;
}

function parse(argv: string[]): Options | 'help' {
  const [command, ...rest] = argv;
  if (command === undefined || command === '--help' || command === '-h') return 'help';
  if (!['start', 'status', 'kill', 'start-node', 'stop'].includes(command)) {
    throw new UsageError(`unknown command ${command}`);
  }
  const takesPort = command === 'kill' || command === 'start-node';
  const port = takesPort ? rest.shift() : undefined;
  const flags = readFlags(rest, {
    dir: { type: 'string', default: '/tmp/seckill-redis-cluster' },
    replicas: { type: 'string', default: '1' },
    'node-timeout': { type: 'string', default: '5000' },
  });
  if (takesPort && port === undefined) throw new UsageError(`${command} needs a node's port`);
  return {
    command: command as Options['command'],
    port: port === undefined ? undefined : integerFlag('port', port, 1, 65_535),
    dir: flags.dir,
    replicas: integerFlag('replicas', flags.replicas, 0, 3),
    nodeTimeoutMs: integerFlag('node-timeout', flags['node-timeout'], 500, 60_000),
  };
}

const pidFile = (dir: string, port: number) => join(dir, `${port}.pid`);

function startNode(dir: string, port: number, nodeTimeoutMs: number): void {
  rmSync(pidFile(dir, port), { force: true });
  spawn(
    'redis-server',
    [
      ...ephemeralRedisArgs(port),
      ...clusterNodeArgs(port, dir, nodeTimeoutMs),
      '--daemonize',
      'yes',
      '--pidfile',
      pidFile(dir, port),
      '--logfile',
      join(dir, `${port}.log`),
    ],
    { stdio: 'ignore' },
  );
}

async function killNode(dir: string, port: number): Promise<void> {
  if (!existsSync(pidFile(dir, port))) return;
  const pid = Number(readFileSync(pidFile(dir, port), 'utf8').trim());
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    return; // gone already
  }
  rmSync(pidFile(dir, port), { force: true });
}

function readClusterFile(dir: string): ClusterFile {
  const file = join(dir, 'cluster.json');
  if (!existsSync(file)) throw new ScriptError(`no Redis Cluster of ours in ${dir}`);
  return JSON.parse(readFileSync(file, 'utf8')) as ClusterFile;
}

async function waitUntil(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 150; i++) {
    if (await check()) return;
    await sleep(200);
  }
  throw new ScriptError(`timed out waiting for ${what}`);
}

async function run(options: Options): Promise<boolean> {
  const { dir } = options;
  if (options.command === 'start') {
    if (existsSync(join(dir, 'cluster.json'))) {
      throw new ScriptError(`${dir} holds a cluster already (stop it first)`);
    }
    mkdirSync(dir, { recursive: true });
    const ports = await freeClusterPorts(50, 3 * (1 + options.replicas));
    writeFileSync(
      join(dir, 'cluster.json'),
      `${JSON.stringify({ ports, nodeTimeoutMs: options.nodeTimeoutMs } satisfies ClusterFile)}\n`,
    );
    for (const port of ports) startNode(dir, port, options.nodeTimeoutMs);
    await waitUntil(async () => ports.every((port) => existsSync(pidFile(dir, port))), 'the nodes');
    await createCluster(ports, options.replicas);
    await waitUntil(() => clusterIsOk(ports), 'cluster_state:ok on every node');
    console.log(`REDIS_CLUSTER_NODES=${ports.map((port) => `127.0.0.1:${port}`).join(',')}`);
    return true;
  }
  const cluster = readClusterFile(dir);
  const known = (port: number) => {
    if (!cluster.ports.includes(port)) throw new UsageError(`the cluster has no node on ${port}`);
    return port;
  };
  switch (options.command) {
    case 'kill':
      await killNode(dir, known(options.port!));
      return true;
    case 'start-node':
      startNode(dir, known(options.port!), cluster.nodeTimeoutMs);
      return true;
    case 'stop':
      for (const port of cluster.ports) await killNode(dir, port);
      rmSync(dir, { recursive: true, force: true });
      return true;
    case 'status': {
      // As the first live node sees it: each node's address, role, and a master's slots.
      for (const port of cluster.ports) {
        try {
          const { stdout } = await promisify(execFile)('redis-cli', [
            '-p',
            String(port),
            'cluster',
            'nodes',
          ]);
          const nodes = stdout
            .trim()
            .split('\n')
            .map((line) => {
              const [, address, flags, , , , , state, ...slots] = line.split(' ');
              const role = flags.replace('myself,', '');
              return `${address.split('@')[0]} ${role} ${state} ${slots.join(' ')}`.trim();
            });
          for (const node of nodes.sort()) console.log(node);
          return true;
        } catch {
          // down: ask the next one
        }
      }
      console.log('no node answers');
      return false;
    }
  }
}

void runScript(parse, USAGE, run);
