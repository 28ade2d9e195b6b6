// A three-node RabbitMQ cluster on this machine, from the installed rabbitmq-server, for trying
// the service on a clustered broker (docs/scaling.md, "RabbitMQ"):
//
//   npm run cluster:rabbitmq -- start   prints the RABBITMQ_URL of its nodes
//   npm run cluster:rabbitmq -- status  the nodes running and who leads each quorum queue
//   npm run cluster:rabbitmq -- kill b  SIGKILLs node b (a crash); `start-node b` brings it back
//   npm run cluster:rabbitmq -- stop    stops every node and removes its directory
//
// Everything lives under --dir (default /tmp/seckill-rabbitmq-cluster): nodes, data, logs, the
// cluster's own Erlang cookie. The machine's broker is never touched.
import { readFlags, integerFlag } from './lib/args.js';
import { UsageError } from './lib/errors.js';
import { runScript } from './lib/main.js';
import {
  clusterUrls,
  killNode,
  nodePid,
  queueLeader,
  readCluster,
  runningNodes,
  startCluster,
  startNode,
  stopCluster,
  type RabbitCluster,
} from './lib/rabbitmq-cluster.js';

const USAGE = `usage: npm run cluster:rabbitmq -- <start|status|kill NODE|start-node NODE|stop> [--dir DIR] [--nodes N]

  start            start a cluster of --nodes (default 3) under --dir and print its RABBITMQ_URL
  status           the nodes, which run, and the leader of each quorum queue
  kill NODE        SIGKILL node NODE (a, b, c…), as a crash
  start-node NODE  start node NODE again (it rejoins the cluster)
  stop             stop every node and remove --dir
  --dir DIR        where the cluster lives (default /tmp/seckill-rabbitmq-cluster)`;

interface Options {
  command: 'start' | 'status' | 'kill' | 'start-node' | 'stop';
  node?: string;
  dir: string;
  nodes: number;
}

function parse(argv: string[]): Options | 'help' {
  const [command, ...rest] = argv;
  if (command === undefined || command === '--help' || command === '-h') return 'help';
  if (!['start', 'status', 'kill', 'start-node', 'stop'].includes(command)) {
    throw new UsageError(`unknown command ${command}`);
  }
  const takesNode = command === 'kill' || command === 'start-node';
  const node = takesNode ? rest.shift() : undefined;
  if (takesNode && (node === undefined || !/^[a-z]$/.test(node))) {
    throw new UsageError(`${command} needs a node letter (a, b, c…)`);
  }
  const flags = readFlags(rest, {
    dir: { type: 'string', default: '/tmp/seckill-rabbitmq-cluster' },
    nodes: { type: 'string', default: '3' },
  });
  return {
    command: command as Options['command'],
    node,
    dir: flags.dir,
    nodes: integerFlag('nodes', flags.nodes, 1, 7),
  };
}

function pick(cluster: RabbitCluster, letter: string) {
  const node = cluster.nodes[letter.charCodeAt(0) - 97];
  if (!node) throw new UsageError(`the cluster has no node ${letter}`);
  return node;
}

async function run(options: Options): Promise<boolean> {
  if (options.command === 'start') {
    const cluster = await startCluster(options.dir, options.nodes);
    console.log(`RABBITMQ_URL=${clusterUrls(cluster).join(',')}`);
    return true;
  }
  const cluster = readCluster(options.dir);
  switch (options.command) {
    case 'stop':
      await stopCluster(cluster);
      return true;
    case 'kill':
      await killNode(pick(cluster, options.node!));
      return true;
    case 'start-node':
      await startNode(cluster, pick(cluster, options.node!));
      return true;
    case 'status': {
      const up = cluster.nodes.filter((node) => nodePid(node) !== null);
      for (const node of cluster.nodes) {
        console.log(`${node.name} port ${node.port} pid ${nodePid(node) ?? '-'}`);
      }
      const via = up[0];
      if (via === undefined) return false;
      console.log(`running: ${(await runningNodes(cluster, via)).join(' ')}`);
      for (const queue of ['seckill.orders', 'seckill.orders.timeout']) {
        console.log(`${queue} leader: ${(await queueLeader(cluster, via, queue))?.name ?? '-'}`);
      }
      return true;
    }
  }
}

void runScript(parse, USAGE, run);
