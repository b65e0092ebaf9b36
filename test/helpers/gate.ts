/**
 * A gate a test opens when it is ready: `hold(reply)` is a scripted model reply that waits for it, and
 * `opened` a promise to pause on (a stream's `beforePiece`). Holding a run's first call until its reader
 * watches lets the reader see every token however late it connects on a loaded machine.
 */
export function gate(): { open: () => void; opened: Promise<void>; hold: <T>(reply: T) => () => Promise<T> } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return {
    open,
    opened,
    hold: (reply) => async () => {
      await opened;
      return reply;
    },
  };
}
