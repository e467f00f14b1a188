// Starts a real AT Protocol PDS (@atproto/pds) and an in-memory did:plc directory
// (@did-plc/server) on 127.0.0.1, for svc's ingest tests. Run with Node 22:
//   node launch.mjs --pds-port P --plc-port Q --dir DIR
// Prints one JSON line when both serve: {"pds": URL, "plc": URL, "adminPassword": …}.
// The directory is in memory, so give every run a fresh DIR.
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import plc from '@did-plc/server'
import { PDS, envToCfg, envToSecrets, readEnv } from '@atproto/pds'

const arg = (name) => {
  const i = process.argv.indexOf(`--${name}`)
  if (i < 0 || i + 1 >= process.argv.length) throw new Error(`missing --${name}`)
  return process.argv[i + 1]
}
const pdsPort = Number(arg('pds-port'))
const plcPort = Number(arg('plc-port'))
const dir = arg('dir')
mkdirSync(join(dir, 'blobs'), { recursive: true })

const plcServer = plc.PlcServer.create({ db: plc.Database.mock(), port: plcPort })
const plcHttp = plcServer.app.listen(plcPort, '127.0.0.1')
await once(plcHttp, 'listening')

const hex = () => randomBytes(32).toString('hex')
const adminPassword = 'admin-pass'
Object.assign(process.env, {
  PDS_HOSTNAME: 'localhost',
  PDS_PORT: String(pdsPort),
  PDS_DATA_DIRECTORY: dir,
  PDS_BLOBSTORE_DISK_LOCATION: join(dir, 'blobs'),
  PDS_JWT_SECRET: hex(),
  PDS_ADMIN_PASSWORD: adminPassword,
  PDS_DPOP_SECRET: hex(),
  PDS_PLC_ROTATION_KEY_K256_PRIVATE_KEY_HEX: hex(),
  PDS_INVITE_REQUIRED: 'false',
  PDS_DEV_MODE: 'true',
  PDS_DISABLE_SSRF_PROTECTION: 'true',
  PDS_DID_PLC_URL: `http://localhost:${plcPort}`,
  LOG_ENABLED: process.env.LOG_ENABLED ?? 'false',
})
const env = readEnv()
const pds = await PDS.create(envToCfg(env), envToSecrets(env))
await pds.ctx.sequencer.start()
const pdsHttp = pds.app.listen(pdsPort, '127.0.0.1')
await once(pdsHttp, 'listening')

console.log(JSON.stringify({ pds: `http://localhost:${pdsPort}`, plc: `http://localhost:${plcPort}`, adminPassword }))

const stop = async () => {
  pdsHttp.close()
  plcHttp.close()
  process.exit(0)
}
process.on('SIGTERM', stop)
process.on('SIGINT', stop)
