/**
 * Client ID Metadata Documents served over https on localhost with a test
 * certificate, for tests of what the authorization server does with such a
 * client (the fetcher's own rules are tested in test/as/metadata-document.test.ts).
 * Configure the server with {@link ClientDocuments.configYaml}.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:https'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { selfSignedCert } from './tls.js'
import { closeServer, listen } from './http.js'

export interface ClientDocuments {
  /** `https://localhost:<port>` */
  base: string
  /** Serve `document` at `path`; the document's `client_id` is set to its own URL, which is returned. */
  serve(path: string, document: Record<string, unknown>): string
  /** The `client_id_metadata_documents` line under authorization_server (localhost allowed, the test CA trusted). */
  configYaml(scopes: readonly string[]): string
  close(): Promise<void>
}

export async function startClientDocuments(): Promise<ClientDocuments> {
  const dir = await mkdtemp(join(tmpdir(), 'bw-client-docs-'))
  const cert = selfSignedCert(dir, 'client-docs')
  const documents = new Map<string, string>()
  const server = createServer({ cert: readFileSync(cert.certFile), key: readFileSync(cert.keyFile) }, (req, res) => {
    const body = documents.get(req.url ?? '')
    if (body === undefined) {
      res.writeHead(404).end()
      return
    }
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(body)
  })
  const { port } = await listen(server)
  const base = `https://localhost:${port}`
  return {
    base,
    serve(path, document) {
      const url = `${base}${path}`
      documents.set(path, JSON.stringify({ ...document, client_id: url }))
      return url
    },
    configYaml: (scopes) =>
      `  client_id_metadata_documents: { enabled: true, allow_hosts: [localhost], ca_file: ${cert.certFile}, scopes: [${scopes.map((s) => `"${s}"`).join(', ')}] }`,
    async close() {
      await closeServer(server)
      await rm(dir, { recursive: true, force: true })
    },
  }
}
