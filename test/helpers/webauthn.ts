import type { CDPSession, Page } from 'playwright-core'

/**
 * A virtual platform authenticator for `page` (WebAuthn Level 3 automation
 * through Chromium's DevTools protocol): CTAP2, discoverable credentials,
 * user verification, presence given without a prompt.
 */
export async function addAuthenticator(page: Page): Promise<{ cdp: CDPSession; authenticatorId: string }> {
  const cdp = await page.context().newCDPSession(page)
  await cdp.send('WebAuthn.enable', { enableUI: false })
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  })
  return { cdp, authenticatorId }
}
