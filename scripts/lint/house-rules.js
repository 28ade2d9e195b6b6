// The project's own lint rules (CONTRIBUTING.md, "House rules"), loaded by eslint.config.js as
// the plugin `house`. Each one fails naming the file, the class or the import, and the rule.
import { basename } from 'node:path';

/**
 * A file's role is the part of its name between the last two dots (`redis-purchase.service.ts`:
 * `service`); a file without one has no role. Each role that holds classes names their suffix.
 */
export const CLASS_ROLES = {
  module: 'Module',
  controller: 'Controller',
  service: 'Service',
  repository: 'Repository',
  store: 'Store',
  scripts: 'Scripts',
  cron: 'Cron',
  consumer: 'Consumer',
  publisher: 'Publisher',
  guard: 'Guard',
  pipe: 'Pipe',
  filter: 'Filter',
  entity: 'Entity',
  dto: 'Dto',
  storage: 'Storage',
  connection: 'Connection',
  policy: 'Policy',
  error: 'Error',
};

/** Roles of files that hold no class: functions, types, constants, configuration. */
export const PLAIN_ROLES = new Set([
  'config',
  'constants',
  'decorator',
  'decorators',
  'hook',
  'types',
  'validation',
]);

/** Roles whose file holds a feature's several classes of a kind: only the suffix is checked. */
const SUFFIX_ONLY_ROLES = new Set(['dto']);

/** Nest's class decorators: such a class is a provider, controller or module, and needs a role. */
const NEST_DECORATORS = new Set(['Injectable', 'Controller', 'Module', 'Catch']);

/** `redis-purchase.service` -> `redispurchaseservice`: how a class name is compared with a file's. */
const squashed = (text) => text.replace(/[-._]/g, '').toLowerCase();

/** `fallback-gate.service.ts` -> {stem: 'fallback-gate', role: 'service'}; a `.d.ts` -> null. */
export function fileRole(path) {
  const name = basename(path).replace(/\.ts$/, '');
  if (name.endsWith('.d')) return null;
  const dot = name.lastIndexOf('.');
  return dot < 0
    ? { stem: name, role: null }
    : { stem: name.slice(0, dot), role: name.slice(dot + 1) };
}

function decoratorName(decorator) {
  const expression = decorator.expression;
  const callee = expression.type === 'CallExpression' ? expression.callee : expression;
  return callee.type === 'Identifier' ? callee.name : null;
}

/**
 * A class is named as its file says: in `x.ROLE.ts` every exported class ends with the role's suffix, and
 * a file's one exported class is the file's name (`redis-purchase.service.ts` ->
 * `RedisPurchaseService`, `queue.scripts.ts` -> `QueueScripts`); a file without a role holds no
 * Nest provider, controller or module, and its one exported class is its name.
 */
const classMatchesFile = {
  meta: {
    type: 'suggestion',
    docs: { description: "a class is named as its file's role says (CONTRIBUTING.md)" },
    schema: [],
    messages: {
      unknownRole:
        "'{{file}}': '.{{role}}.ts' is not a role; name the file after one ({{roles}}) or without a role",
      plainRole: "class {{name}} in '{{file}}': a '.{{role}}.ts' file holds no class",
      suffix: "class {{name}} in '{{file}}' must end with '{{suffix}}' (the file's role)",
      name: "class {{name}} in '{{file}}' must be named {{expected}} (the file's name)",
      needsRole:
        "class {{name}} in '{{file}}' is a Nest @{{decorator}}: its file needs a role ('x.service.ts', 'x.store.ts', …)",
    },
  },
  create(context) {
    const file = context.filename;
    const parsed = fileRole(file);
    if (!parsed) return {};
    const shown = file.slice(file.indexOf('src/'));
    const { stem, role } = parsed;
    const exported = [];
    const misnamed = new Set();
    const report = (node, messageId, data) =>
      context.report({ node, messageId, data: { file: shown, role, ...data } });
    return {
      Program(node) {
        if (role && !(role in CLASS_ROLES) && !PLAIN_ROLES.has(role)) {
          report(node, 'unknownRole', { roles: Object.keys(CLASS_ROLES).join(', ') });
        }
      },
      ClassDeclaration(node) {
        if (!node.id) return;
        const name = node.id.name;
        if (role && PLAIN_ROLES.has(role)) return report(node.id, 'plainRole', { name });
        // A class the file keeps to itself (an error it throws and catches, a helper) is its own.
        if (node.parent.type === 'ExportNamedDeclaration') {
          exported.push(node);
          const suffix = role && CLASS_ROLES[role];
          if (suffix && !name.endsWith(suffix)) {
            misnamed.add(node);
            return report(node.id, 'suffix', { name, suffix });
          }
        }
        if (!role) {
          const nest = (node.decorators ?? [])
            .map(decoratorName)
            .find((d) => NEST_DECORATORS.has(d));
          if (nest) report(node.id, 'needsRole', { name, decorator: nest });
        }
      },
      'Program:exit'() {
        if (
          exported.length !== 1 ||
          (role && !(role in CLASS_ROLES)) ||
          SUFFIX_ONLY_ROLES.has(role)
        ) {
          return;
        }
        const [only] = exported;
        if (misnamed.has(only)) return;
        const expected = role ? `${stem}.${role}` : stem;
        if (squashed(only.id.name) !== squashed(expected)) {
          const pascal = expected
            .split(/[-.]/)
            .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
            .join('');
          report(only.id, 'name', { name: only.id.name, expected: pascal });
        }
      },
    };
  },
};

export default {
  meta: { name: 'house' },
  rules: { 'class-matches-file': classMatchesFile },
};
