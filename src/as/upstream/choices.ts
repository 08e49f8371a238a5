import type { AsContext } from '../context.js'

/** How the login page offers sign-in: the local form (`local_login`) and a button per identity provider. */
export function loginChoices(as: AsContext): { localLogin: boolean; providers: Array<{ id: string; name: string }> } {
  return { localLogin: as.as.localLogin, providers: as.as.identityProviders.map((p) => ({ id: p.id, name: p.name })) }
}
