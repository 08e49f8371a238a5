/**
 * What the Shared Signals receiver keeps (docs/signals.md): the lease that
 * lets one instance at a time poll a transmitter (RFC 8936), and the people
 * a transmitter disabled (RISC account-disabled) until it enables them again.
 * A SET's `jti` is remembered in the single-use family. As a transmitter,
 * bearward keeps each receiver's stream configuration here: one per receiver
 * client, as the stream endpoints wrote it (JSON text the store never reads).
 */
export interface SignalStore {
  /**
   * Atomic: take the lease `name` for `holder` for `ttlMs`, or renew it when
   * `holder` has it. False when another holder's lease has not yet expired.
   * Of N concurrent calls by different holders on a free lease one gets true.
   */
  lease(name: string, holder: string, ttlMs: number): Promise<boolean>
  /** Give the lease up when `holder` has it (another holder's is left alone). */
  release(name: string, holder: string): Promise<void>
  /** Refuse new sign-ins of the bearward `sub` until {@link enableAccount}; kept until then. */
  disableAccount(sub: string): Promise<void>
  enableAccount(sub: string): Promise<void>
  isDisabled(sub: string): Promise<boolean>
  /**
   * Atomic: store the stream of `clientId` (replacing its own). A new one is
   * refused (false, nothing stored) when `maxStreams` streams exist already.
   */
  putStream(clientId: string, stream: string, maxStreams: number): Promise<boolean>
  getStream(clientId: string): Promise<string | null>
  /** Forget the stream of `clientId`; false when it had none. */
  deleteStream(clientId: string): Promise<boolean>
  /** The client ids that have a stream. */
  listStreams(): Promise<string[]>
}
