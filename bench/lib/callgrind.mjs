// Instructions callgrind counts in one process between its WARM and DONE lines (bench/js-path, bench/transports):
// instrumentation starts off (valgrind then runs the code uncounted, and faster) and is switched on
// (`callgrind_control -i on`) when the process prints WARM, off when it prints DONE; at each point the
// process waits for a line on stdin. Resolves the count divided by `per` (the measured requests or calls).
import { execFileSync, spawn } from 'node:child_process'

export function gatedInstructions(command, env, per, label) {
  return new Promise((resolve, reject) => {
    const child = spawn(
      'valgrind',
      ['--tool=callgrind', '--instr-atstart=no', '--callgrind-out-file=/dev/null', ...command],
      { env },
    )
    let stderr = ''
    child.stderr.on('data', (chunk) => {
      stderr += chunk
    })
    let stdout = ''
    child.stdout.on('data', (chunk) => {
      stdout += chunk
      for (const [marker, state] of [
        ['WARM\n', 'on'],
        ['DONE\n', 'off'],
      ]) {
        if (stdout.includes(marker)) {
          stdout = stdout.replace(marker, '')
          execFileSync('callgrind_control', ['-i', state, String(child.pid)], { stdio: 'ignore' })
          child.stdin.write('\n')
        }
      }
    })
    child.on('close', (status) => {
      const match = /Collected : (\d+)/.exec(stderr)
      if (status !== 0 || !match) reject(new Error(`${label} under callgrind: ${stderr.slice(-2000)}`))
      else resolve(Number(match[1]) / per)
    })
  })
}
