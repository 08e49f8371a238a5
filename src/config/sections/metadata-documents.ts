/**
 * `authorization_server.client_id_metadata_documents`: a `client_id` that is
 * an https URL names the client's own metadata document (off by default).
 * `allow_hosts` are the hosts that may be fetched although they resolve to a
 * private or loopback address; `ca_file` adds a private CA.
 */
import { SSF_STREAM_SCOPE } from './ssf-scope.js'
import type { Node } from 'yaml'
import { isHostname } from '../listen.js'
import type { Reader } from '../reader.js'
import type { ClientIdMetadataDocumentsConfig } from '../validated-config.js'
import { keysAt } from '../contract.js'

export const METADATA_DOCUMENT_KEYS = keysAt('#/$defs/authorizationServer/properties/client_id_metadata_documents')

export function readMetadataDocuments(
  r: Reader,
  node: Node | undefined,
  path: string,
  knownScopes: ReadonlySet<string>,
): ClientIdMetadataDocumentsConfig | null {
  if (node === undefined) return null
  const m = r.map(node, path, METADATA_DOCUMENT_KEYS)
  if (m === undefined) return null
  const enabled = m.opt('enabled', r.bool(), false)
  const allowHosts = m.opt(
    'allow_hosts',
    r.list(
      r.str({
        check: (v) => (isHostname(v.replace(/^\[(.*)\]$/, '$1')) ? undefined : `\`${v}\` is not a host name (write the host alone, without scheme or port)`),
      }),
    ),
    [],
  )
  const caFile = m.isNull('ca_file') ? null : (m.maybe('ca_file', r.filePath()) ?? null)
  const listed = m.maybe('scopes', r.located(r.str()))
  for (const s of listed ?? []) {
    if (!knownScopes.has(s.value)) r.problem(s.node, s.path, `unknown scope \`${s.value}\`; declare it under \`authorization_server.scopes\``)
  }
  const config: ClientIdMetadataDocumentsConfig = {
    allowHosts: [...new Set(allowHosts.map((h) => h.toLowerCase()))],
    caFile,
    // Strangers' clients use the code flow: `ssf:stream` (a receiver's client-credentials scope) is not theirs by default.
    scopes: listed === undefined ? [...knownScopes].filter((s) => s !== SSF_STREAM_SCOPE) : [...new Set(listed.map((s) => s.value))],
  }
  return enabled ? config : null
}
