import { checkConfig } from '/work/main/src/config/load.js'
const res = await checkConfig(process.argv[2] ?? '/work/main/config/gateway.yaml', { ...process.env })
console.log(JSON.stringify(res, null, 1))
