// A MariaDB primary and a replica following it by GTID, on this machine, from the installed
// mariadbd, for trying the service on them and for the failover drill (docs/scaling.md, "A MariaDB
// primary and a replica"):
//
//   npm run cluster:mariadb -- start          prints the primary's DATABASE_URL and the replica's
//   npm run cluster:mariadb -- status         each server's role, pid, GTID position, the lag
//   npm run cluster:mariadb -- kill primary   SIGKILLs a server (primary or replica), as a crash
//   npm run cluster:mariadb -- promote        the replica stops following and takes writes
//   npm run cluster:mariadb -- start-server replica   starts a server again (a replica follows)
//   npm run cluster:mariadb -- stop           stops both and removes --dir
//
// Everything lives under --dir (default /tmp/seckill-mariadb-pair). The machine's server (3306)
// is never touched.
import { readFlags } from './lib/args.js';
import { UsageError } from './lib/errors.js';
import { runScript } from './lib/main.js';
import {
  byRole,
  follow,
  killServer,
  promoteReplica,
  readPair,
  replicaStatus,
  serverPid,
  serverUrl,
  sql,
  startPair,
  startServer,
  stopPair,
  type ServerRole,
} from './lib/mariadb-pair.js';

const USAGE = `usage: npm run cluster:mariadb -- <start|status|kill ROLE|start-server ROLE|promote|stop> [--dir DIR] [--database NAME]

  start              a primary and a replica following it, under --dir
  status             each server's role, pid and GTID position, and the replica's lag
  kill ROLE          SIGKILL the primary or the replica, as a crash
  start-server ROLE  start that server again (a replica then follows the primary)
  promote            the failover: the replica stops following, takes writes, and is the primary
  stop               stop both and remove --dir
  --dir DIR          where the pair lives (default /tmp/seckill-mariadb-pair)
  --database NAME    the database named in the URLs start prints (default seckill)`;

interface Options {
  command: 'start' | 'status' | 'kill' | 'start-server' | 'promote' | 'stop';
  role?: ServerRole;
  dir: string;
  database: string;
}

function parse(argv: string[]): Options | 'help' {
  const [command, ...rest] = argv;
  if (command === undefined || command === '--help' || command === '-h') return 'help';
  if (!['start', 'status', 'kill', 'start-server', 'promote', 'stop'].includes(command)) {
    throw new UsageError(`unknown command ${command}`);
  }
  const takesRole = command === 'kill' || command === 'start-server';
  const role = takesRole ? rest.shift() : undefined;
  if (takesRole && role !== 'primary' && role !== 'replica') {
    throw new UsageError(`${command} needs primary or replica`);
  }
  const flags = readFlags(rest, {
    dir: { type: 'string', default: '/tmp/seckill-mariadb-pair' },
    database: { type: 'string', default: 'seckill' },
  });
  if (!/^[A-Za-z0-9_]{1,64}$/.test(flags.database)) {
    throw new UsageError('--database may hold only letters, digits and "_"');
  }
  return {
    command: command as Options['command'],
    role: role as ServerRole | undefined,
    dir: flags.dir,
    database: flags.database,
  };
}

async function run(options: Options): Promise<boolean> {
  if (options.command === 'start') {
    const pair = await startPair(options.dir);
    console.log(`DATABASE_URL=${serverUrl(byRole(pair, 'primary'), options.database)}`);
    console.log(`# the replica: ${serverUrl(byRole(pair, 'replica'), options.database)}`);
    return true;
  }
  let pair = readPair(options.dir);
  switch (options.command) {
    case 'stop':
      await stopPair(pair);
      return true;
    case 'kill':
      await killServer(byRole(pair, options.role!));
      return true;
    case 'start-server': {
      const server = byRole(pair, options.role!);
      await startServer(server);
      if (server.role === 'replica') await follow(server, byRole(pair, 'primary'));
      return true;
    }
    case 'promote':
      pair = await promoteReplica(pair);
      console.log(`DATABASE_URL=${serverUrl(byRole(pair, 'primary'), options.database)}`);
      return true;
    case 'status':
      for (const server of pair.servers) {
        const pid = serverPid(server);
        let position = '-';
        let lag = '';
        if (pid !== null) {
          const variable = server.role === 'primary' ? 'gtid_binlog_pos' : 'gtid_slave_pos';
          const [row] = await sql<Record<string, string>[]>(server, `SELECT @@${variable} AS pos`);
          position = `${variable} ${row.pos || '(none)'}`;
          if (server.role === 'replica') {
            const status = await replicaStatus(server);
            lag = ` io=${status.io} sql=${status.sql} behind=${status.secondsBehind ?? '-'} s${status.error ? ` error: ${status.error}` : ''}`;
          }
        }
        console.log(`${server.role} port ${server.port} pid ${pid ?? '-'} ${position}${lag}`);
      }
      return true;
  }
}

void runScript(parse, USAGE, run);
