/**
 * `compute`, its answers kept by argument, at most `capacity` of them (dropped whole when full,
 * refilled by the few in use): for pure functions asked the same few arguments often.
 */
export function remembered<T>(
  compute: (argument: string) => T,
  capacity = 4_096,
): (argument: string) => T {
  const answers = new Map<string, T>();
  return (argument) => {
    if (answers.has(argument)) return answers.get(argument) as T;
    const answer = compute(argument);
    if (answers.size >= capacity) answers.clear();
    answers.set(argument, answer);
    return answer;
  };
}
