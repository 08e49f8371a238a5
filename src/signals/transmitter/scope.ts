/** The scope a receiver's client-credentials access token carries to manage its stream (built in: authorization-server.ts). */
export const SSF_STREAM_SCOPE = 'ssf:stream'
