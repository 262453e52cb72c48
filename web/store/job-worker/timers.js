// Timers in seconds, for every wait of the runtime.

/** setTimeout in seconds, capped where timers overflow (2^31 - 1 ms: they would fire at once). */
const later = (f, seconds) => setTimeout(f, Math.min(0x7fffffff, Math.max(0, seconds) * 1000));
const sleep = (seconds) => new Promise((resolve) => later(resolve, seconds));

export { later, sleep };
