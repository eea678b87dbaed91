/**
 * Keeps the process alive while actor calls wait for replies. Actor sessions are unref'd so an
 * idle client never holds the event loop open, but then a script whose only pending work is an
 * awaited actor call would exit under it (status 13, unsettled top-level await). One ref'd
 * timer while any call is in flight covers every connection at the cost of a counter per call.
 */
let inFlight = 0;
let timer: NodeJS.Timeout | undefined;

/** Marks one call in flight; the returned function, called once or more, marks it settled. */
export function holdLoopForCall(): () => void {
  if (inFlight++ === 0) timer = setInterval(() => {}, 1 << 30);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    if (--inFlight === 0) {
      clearInterval(timer);
      timer = undefined;
    }
  };
}
