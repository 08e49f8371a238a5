import { hashSecret } from '../../src/crypto/secret.js'

/**
 * The hashes of the secrets and passwords the shared test configs hold
 * (as-config.ts, as-front.ts, as-back.ts, ciba.ts), made once by
 * `hashSecret` at the production cost (N=16384), as `bearward hash-secret`
 * writes them. Hashing them in every test process cost 2 to 7 scrypt runs of
 * ~65 ms of CPU each, in ~150 processes; verifying them still runs scrypt as
 * it does for any configured hash.
 */
const HASHES: ReadonlyMap<string, string> = new Map([
  ['e2e-client-secret-value-0123456789abcdef', 'scrypt$16384$8$1$UCfiaJ7I6auyG68OoVsy0A$4fapGt5KNMOjzLkNqcpZLguhfRW39HV104XEMRIozi0'],
  ['correct horse battery staple', 'scrypt$16384$8$1$Swyy4CpAocHIb_-9TbHfOg$5I_Uiv7K6VlvDg9ozi9LHAnBw7i-2-cr8pt-w6MnU4o'],
  ['alice: correct horse battery staple', 'scrypt$16384$8$1$CursFaN4OE7J_y0gGNBo_A$cuo2pXssOWdygWfJBgsu1xOG4VLTrz42VqnyhMoBqSw'],
  ['bob-password-0123456789', 'scrypt$16384$8$1$C38iyapyFyG8XT1WgsmdBg$9nuinlMpBpF1uuYtir22tGNmvvjmQLWis2Uwbo7sAA4'],
  ['client-secret-0123456789abcdefghijklmnop', 'scrypt$16384$8$1$e23OvMQzoW9VFFAnxZwXsQ$2BNaE2IMAayty8aB6gS6eCmQyG2GgintTPlwIsyTDtc'],
  ['web-secret-0123456789abcdefghijklmnopqrstuv', 'scrypt$16384$8$1$vXRm4l3JOXXSpwN00umnYw$7IsESFlsMqOjuZawoOGIAp86Evc4GbwZJ9HrqfN584E'],
  ['other-secret-0123456789abcdefghijklmnopqrst', 'scrypt$16384$8$1$24-GyklDrbsQfinvFlOc-A$WU-J_tNBbbC7Y1LT0iYS40NZ7pQtptCyjxz4Jkra_lE'],
  ['service secret+with/odd:chars%&=', 'scrypt$16384$8$1$-GpuRA0eGfDZ-x7fvbYBew$0cCsw43tDv8uytu6DINnkF7nskPd89C0HVqG5b-Wmyo'],
  ['poster-secret-0123456789abcdefghijklmnopqr', 'scrypt$16384$8$1$FQhYj_9yCqbj75tLRfS_NA$9gVDPOq43WKQ-cNjvh-gVqDRsQ4zRMYEF64Px-bucpE'],
  ['legacy-secret-0123456789abcdefghijklmnopqr', 'scrypt$16384$8$1$3VtNMVh6Jfyf84maZr1dSg$MRikaj4JeOBgQ8K-ItZ-inIGf-pXABPPpRpL2fVxkas'],
  ['looker-secret-0123456789abcdefghijklmnopqr', 'scrypt$16384$8$1$B7-pAO8pqJF4y4J8IMK4pg$-sV1b_7xQj9LzF9qo6gfq6yd-otxopxjquGTv8iASmY'],
  ['back-channel-user-password-0123', 'scrypt$16384$8$1$Ixg49dogqASrfwziWfOVQA$LOhOakaGiIg5j5wLjo9pghfX_dZL4tUZhZLmO_X5AO8'],
  ['agent-secret-0123456789abcdefghijklmnopqrs', 'scrypt$16384$8$1$14Pjan_MOTnPB5U-uaXqSg$5wXybDCP5-wsPQ3SnckUw4xcb8s0RRgGHjh6ShcGGTM'],
  ['pinger-secret-0123456789abcdefghijklmnopq', 'scrypt$16384$8$1$QQAdxYukAhr7N6w64vXIfA$I7naUXINkwxCtGN0viNhUZqsxZXKVa39Brvz8t6IQfw'],
])

/** The config hash of a test secret: the stored one above, else a fresh `hashSecret`. */
export function testSecretHash(secret: string): Promise<string> {
  const stored = HASHES.get(secret)
  return stored === undefined ? hashSecret(secret) : Promise.resolve(stored)
}
