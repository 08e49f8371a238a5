import t from 'tap'
import { availableParallelism } from 'node:os'
import { at, describe, inspect } from './helpers.js'

const REDIS = 'store: redis://127.0.0.1:6379/0\n'

t.test('workers: default 1, a count, or auto = the cores of this host', async (t) => {
  t.equal(inspect('').config?.workers, 1, 'absent: one process')
  t.equal(inspect(`${REDIS}workers: 3\n`).config?.workers, 3)
  t.equal(inspect(`${REDIS}workers: auto\n`).config?.workers, availableParallelism())
  t.equal(inspect(`${REDIS}workers: \${W}\n`, { W: '2' }).config?.workers, 2, 'a count from the environment')
  t.equal(inspect(`${REDIS}workers: \${W:-auto}\n`).config?.workers, availableParallelism(), 'auto from an env default')
  t.equal(inspect('store: memory\nworkers: 1\n').config?.workers, 1, "one worker on memory is today's single process")
})

t.test('workers: bad values are refused at their position', async (t) => {
  for (const [value, shown] of [
    ['0', 'got 0'],
    ['-2', 'got -2'],
    ['1.5', 'got 1.5'],
    ['many', 'got `many`'],
    ['5000', 'got 5000'],
    ['[2]', 'got a mapping or list'],
  ] as const) {
    const { config, problems } = inspect(`${REDIS}workers: ${value}\n`)
    t.equal(config, null, `workers: ${value} refused`)
    const here = at(problems, 'workers')
    t.equal(here.length, 1, `${value}: one problem at workers\n${describe(problems)}`)
    t.match(here[0], { line: 2, col: 10 }, `${value}: positioned at the value`)
    t.match(here[0]?.message, /whole number of worker processes \(1 to 1024\) or `auto`/, `${value}: says what is expected`)
    t.ok(here[0]?.message.includes(shown), `${value}: shows what was found: ${here[0]?.message}`)
  }
})

t.test('more than one worker on the memory store is refused, with the reason', async (t) => {
  for (const yaml of ['workers: 2\n', 'store: memory\nworkers: 2\n', 'store: memory\nworkers: auto\n']) {
    const { config, problems } = inspect(yaml)
    t.equal(config, null, `${JSON.stringify(yaml)} refused`)
    const [problem] = at(problems, 'workers')
    t.match(problem?.message, /state would be split between processes/)
    t.match(problem?.message, /use a Redis store/)
  }
})
