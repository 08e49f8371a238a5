/** The scope a receiver's client-credentials access token carries to manage its stream (built in: config/sections/authorization-server.ts). */
export { SSF_STREAM_SCOPE } from '../../config/sections/ssf-scope.js'
