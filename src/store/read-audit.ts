/**
 * The audit of reads, kept off the read path: `record` only queues the record
 * (no I/O, nothing awaited, nothing thrown), and the queue is written to the
 * store in batches shortly after — or at once by `flush`, which the audit
 * listing and a closing process call. A failed write is retried with the next
 * batch; it never fails a read. One queue per service: memory threads' reads
 * (`MemoryStore.appendReads`) and long-term memory's (`LongTermStore.appendAudit`).
 */

export interface ReadAuditOptions {
  /** How long a record may wait for its batch, in ms. @default 50 */
  flushAfterMs?: number;
  /** A batch is written as soon as it has this many records. @default 500 */
  maxBatch?: number;
  /** Records kept for a retry while the store fails; the oldest go first beyond it. @default 10000 */
  maxPending?: number;
  /** Told of every failed write and of records given up. @default process.emitWarning */
  onError?: (err: Error) => void;
}

export class ReadAudit<T> {
  private pending: T[] = [];
  private writing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly flushAfterMs: number;
  private readonly maxBatch: number;
  private readonly maxPending: number;
  private readonly onError: (err: Error) => void;

  /** `write` stores one batch of records (e.g. `MemoryStore.appendReads`). */
  constructor(
    private readonly write: (batch: T[]) => Promise<void>,
    options: ReadAuditOptions = {},
  ) {
    this.flushAfterMs = options.flushAfterMs ?? 50;
    this.maxBatch = options.maxBatch ?? 500;
    this.maxPending = options.maxPending ?? 10_000;
    this.onError = options.onError ?? ((err) => process.emitWarning(err.message, 'ThreadlineReadAudit'));
  }

  /** Queues one record; returns at once. */
  record(read: T): void {
    this.pending.push(read);
    if (this.pending.length >= this.maxBatch) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), this.flushAfterMs).unref();
  }

  /** Writes everything queued so far (and waits for a write under way). Never throws. */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    while (this.writing) await this.writing;
    if (this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
    this.writing = this.write(batch).then(
      () => undefined,
      (err: unknown) => {
        // Back in the queue, before anything newer, for the next batch; the oldest beyond the cap are given up.
        this.pending = [...batch, ...this.pending];
        const lost = this.pending.length - this.maxPending;
        if (lost > 0) this.pending = this.pending.slice(lost);
        this.onError(new Error(`could not record ${batch.length} read(s): ${err instanceof Error ? err.message : String(err)}${lost > 0 ? `; ${lost} given up` : ''}`));
        this.timer ??= setTimeout(() => void this.flush(), Math.max(this.flushAfterMs, 1_000)).unref();
      },
    );
    try {
      await this.writing;
    } finally {
      this.writing = undefined;
    }
  }
}
