// How long a test waits for a condition before it fails. Every wait returns as soon as its condition holds, so a
// generous bound costs a passing test nothing; it only has to hold on a loaded machine: at load 15 on 2 cores a
// test runs up to ~6x slower than idle. TRIVIUM_TEST_WAIT_SCALE sets the factor (e.g. 1 to find a hang sooner).
const scale = Number(process.env.TRIVIUM_TEST_WAIT_SCALE ?? 6)
export const WAIT_SCALE = Number.isFinite(scale) && scale > 0 ? scale : 6

/** The bound for a wait written with its idle-machine figure. */
export function waitBound(ms: number): number {
  return ms * WAIT_SCALE
}
