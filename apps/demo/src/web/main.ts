// The demo's web page: sign in over HTTP, then list, create and import tasks over one WebSocket with the
// typed client generated from the schema; ticking a task is an edit sent on the page's `tasks.sync` stream,
// which also brings every other client's change (PROTOCOL.md "Client and bidirectional streams").
// Everything is rendered with textContent (no HTML injection from task titles).
// The session (issue 44 item 12): the access token is renewed with the refresh token before it expires (and
// whenever a call finds it expired), the WebSocket reconnects with the new one and the sync stream is opened
// again; the refresh token is kept in sessionStorage so a reload stays signed in (a closed tab forgets it);
// when the refresh token is refused the page says the session ended and shows the sign-in form.
import { createClient, type TriviumClient } from '@trivium/client'
import {
  createTypedClient,
  endpoints,
  type SyncChangeData,
  type SyncEditData,
  type TaskData,
} from '../generated/index.js'

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T

const http = createTypedClient(createClient({ transport: 'http', url: location.origin, endpoints }))
let socket: TriviumClient | undefined
let accessToken = ''
/** The refresh token and when the access token expires (ms since the epoch). */
let refreshToken = ''
let expiresAt = 0
let renewTimer: ReturnType<typeof setTimeout> | undefined
let renewing: Promise<string> | undefined
const SESSION_KEY = 'trivium-tasks-session'
/** The signed-in user's id (their own tasks read "you") and whether they may delete (admins hold tasks:delete). */
let myId: number | undefined
let canDelete = false
/** The page's `tasks.sync` stream: edits go out on it, confirmed and other clients' changes come back. */
let syncing: { send(edit: SyncEditData): Promise<boolean>; cancel(reason?: unknown): void } | undefined
let nextRef = 0
const tasks = new Map<number, TaskData>()
/** Tasks are listed newest first, PAGE at a time; `nextCursor` of the last page loaded, if any. */
const PAGE = 50
let nextCursor: string | undefined
let loading = false

/** The live connection's state; before sign-in there is none to show ("not signed in", not "offline"). */
function setStatus(state: string, text = state): void {
  const el = $('status')
  el.dataset.state = state
  el.textContent = text
}

function render(): void {
  const list = $('tasks')
  list.replaceChildren()
  for (const task of [...tasks.values()].sort((a, b) => b.id - a.id)) {
    const li = document.createElement('li')
    li.dataset.id = String(task.id)
    if (task.done) li.className = 'done'
    const box = document.createElement('input')
    box.type = 'checkbox'
    box.checked = task.done
    box.addEventListener('change', () => {
      edit({ ref: ++nextRef, id: task.id, done: box.checked })
    })
    const title = document.createElement('span')
    title.className = 'title'
    title.textContent = task.title
    const owner = document.createElement('small')
    owner.className = 'owner'
    owner.textContent = task.ownerId === myId ? 'you' : (task.ownerName ?? `user #${task.ownerId}`)
    li.append(box, title, owner)
    if (canDelete) {
      const remove = document.createElement('button')
      remove.type = 'button'
      remove.className = 'delete'
      remove.textContent = 'Delete'
      remove.setAttribute('aria-label', `Delete “${task.title}”`)
      remove.addEventListener('click', () => {
        remove.disabled = true
        typed()
          .tasks.delete({ id: task.id })
          .then(() => {
            tasks.delete(task.id)
            render()
          })
          .catch((err) => {
            remove.disabled = false
            showTaskError(err)
          })
      })
      li.append(remove)
    }
    list.append(li)
  }
  $('more-button').hidden = nextCursor === undefined
}

/** The next page of older tasks (the first page when `first`). */
async function loadPage(first: boolean): Promise<void> {
  if (loading || (!first && nextCursor === undefined)) return
  loading = true
  try {
    const page = await typed().tasks.list({
      newestFirst: true,
      limit: PAGE,
      ...(first || nextCursor === undefined ? {} : { cursor: nextCursor }),
    })
    if (first) tasks.clear()
    for (const task of page.items) tasks.set(task.id, task)
    nextCursor = page.nextCursor ?? undefined
    render()
  } finally {
    loading = false
  }
}

function typed() {
  if (!socket) throw new Error('not connected')
  return createTypedClient(socket)
}

function showTaskError(err: unknown): void {
  $('task-error').textContent = err instanceof Error ? err.message : String(err)
}

function apply(change: SyncChangeData): void {
  if (change.kind === 'rejected') {
    // The edit was refused (e.g. not the owner): say why and show the task as stored again.
    showTaskError(change.error?.message ?? 'Change refused')
  } else if (change.task) {
    if (change.kind === 'deleted') tasks.delete(change.task.id)
    else tasks.set(change.task.id, change.task)
  }
  render()
}

/** Sends an edit on the sync stream (its confirmation, or refusal, comes back as a change). */
function edit(change: SyncEditData): void {
  $('task-error').textContent = ''
  if (!syncing) {
    showTaskError('Not connected')
    return
  }
  syncing.send(change).catch(showTaskError)
}

async function sync(): Promise<void> {
  syncing?.cancel()
  const stream = typed().tasks.sync()
  syncing = stream
  try {
    for await (const change of stream) apply(change)
  } catch (err) {
    if (syncing === stream) showTaskError(err)
  }
}

/** `tasks.import`: one task per line, streamed to the server; it answers one summary. */
async function importLines(text: string): Promise<void> {
  // Blank lines are not sent, but a refusal names the line as the user sees it in the box.
  const lines = text
    .split('\n')
    .map((title, i) => ({ title, line: i + 1 }))
    .filter(({ title }) => title.trim() !== '')
  if (lines.length === 0) return
  const started = typed().tasks.import()
  await started.sendAll(lines.map(({ title }) => ({ title })))
  const summary = await started.response
  const refused = summary.errors.map((e) => `line ${lines[e.index]?.line ?? e.index + 1}: ${e.message}`)
  $('import-result').textContent =
    `Imported ${summary.created} task${summary.created === 1 ? '' : 's'}` +
    (summary.failed > 0 ? `; ${summary.failed} refused (${refused.join('; ')})` : '')
}

/** Keeps a token pair: renewed a minute (or a tenth of its life) before the access token expires. */
function keep(
  pair: { accessToken: string; refreshToken: string; expiresIn: number },
  username: string,
): void {
  accessToken = pair.accessToken
  refreshToken = pair.refreshToken
  expiresAt = Date.now() + pair.expiresIn * 1000
  sessionStorage.setItem(SESSION_KEY, JSON.stringify({ refreshToken, username }))
  clearTimeout(renewTimer)
  const lead = Math.min(60_000, (pair.expiresIn * 1000) / 10)
  renewTimer = setTimeout(() => void renew(username).catch(() => {}), pair.expiresIn * 1000 - lead)
}

/** One renewal at a time (the timer, a disconnect and the client's `refresh` may ask at once). */
function renew(username = $('me').textContent ?? ''): Promise<string> {
  renewing ??= http.auth
    .refresh({ refreshToken })
    .then((pair) => {
      keep(pair, username)
      return pair.accessToken
    })
    .catch((err) => {
      // A refused refresh token (expired, revoked, or used by someone else) ends the session; a network
      // failure (the server restarting) does not: the next disconnect or call tries again.
      if ((err as { statusCode?: number }).statusCode === 401)
        signOut('Your session has ended: sign in again.')
      throw err
    })
    .finally(() => {
      renewing = undefined
    })
  return renewing
}

async function signedIn(username: string): Promise<void> {
  socket?.close()
  const wsUrl = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`
  socket = createClient({
    transport: 'websocket',
    url: wsUrl,
    endpoints,
    token: () => accessToken,
    refresh: () => renew(username), // a call that finds the token expired renews it and is retried once
  })
  socket.onConnected?.(({ reconnected }) => {
    setStatus('connected')
    // The sync stream ended with the old connection: open it again, and reload what changed meanwhile.
    if (reconnected) {
      void sync()
      loadPage(true).catch(showTaskError)
    }
  })
  socket.onDisconnected?.(({ reason }) => {
    setStatus('reconnecting')
    // The server closes the connection (4001) when its token expires or is revoked: renew the token before
    // the reconnect needs it, or learn that the session has ended.
    if (Date.now() >= expiresAt - 5_000 || /\bcode 4001\b/.test(reason)) renew(username).catch(() => {})
  })
  $('me').textContent = username
  const me = await typed().auth.me({})
  myId = me.id
  canDelete = me.roles.includes('admin')
  $('login-view').hidden = true
  $('tasks-view').hidden = false
  nextCursor = undefined
  await loadPage(true)
  setStatus('connected')
  void sync()
}

async function login(username: string, password: string): Promise<void> {
  keep(await http.auth.login({ username, password }), username)
  await signedIn(username)
}

/**
 * Registering and signing in hash a password (bcrypt, a second or two, longer under load): the form says
 * it is working and takes no second click until the answer.
 */
function busy(message: string, work: () => Promise<void>): void {
  const form = $('login-form')
  const buttons = Array.from(form.getElementsByTagName('button'))
  $('login-error').textContent = ''
  $('login-busy').textContent = message
  form.setAttribute('aria-busy', 'true')
  for (const button of buttons) button.disabled = true
  work()
    .catch((err) => {
      $('login-error').textContent = (err as Error).message
    })
    .finally(() => {
      $('login-busy').textContent = ''
      form.removeAttribute('aria-busy')
      for (const button of buttons) button.disabled = false
    })
}

$('login-form').addEventListener('submit', (event) => {
  event.preventDefault()
  busy('Signing in…', () =>
    login($<HTMLInputElement>('username').value, $<HTMLInputElement>('password').value),
  )
})

$('register-button').addEventListener('click', () => {
  const username = $<HTMLInputElement>('username').value
  const password = $<HTMLInputElement>('password').value
  busy('Registering…', async () => {
    await http.auth.register({ username, password, email: $<HTMLInputElement>('email').value })
    await login(username, password)
  })
})

$('create-form').addEventListener('submit', (event) => {
  event.preventDefault()
  const input = $<HTMLInputElement>('new-title')
  $('task-error').textContent = ''
  typed()
    .tasks.create({ title: input.value })
    .then((task) => {
      input.value = ''
      tasks.set(task.id, task)
      render()
    })
    .catch(showTaskError)
})

$('import-form').addEventListener('submit', (event) => {
  event.preventDefault()
  const input = $<HTMLTextAreaElement>('import-text')
  const button = $<HTMLButtonElement>('import-button')
  $('import-result').textContent = ''
  $('task-error').textContent = ''
  button.disabled = true
  importLines(input.value)
    .then(() => {
      input.value = ''
    })
    .catch(showTaskError)
    .finally(() => {
      button.disabled = false
    })
})

$('more-button').addEventListener('click', () => {
  loadPage(false).catch(showTaskError)
})

// Infinite scroll: the "older tasks" button loads the next page as soon as it scrolls into view.
new IntersectionObserver((entries) => {
  if (entries.some((e) => e.isIntersecting) && socket) loadPage(false).catch(showTaskError)
}).observe($('more-button'))

/** Back to the sign-in form, with nothing of the session left: tokens, stored session, fields, tasks. */
function signOut(message = ''): void {
  const stream = syncing
  syncing = undefined
  stream?.cancel()
  socket?.close()
  socket = undefined
  clearTimeout(renewTimer)
  accessToken = ''
  refreshToken = ''
  sessionStorage.removeItem(SESSION_KEY)
  myId = undefined
  canDelete = false
  tasks.clear()
  render()
  for (const id of ['username', 'password', 'email']) $<HTMLInputElement>(id).value = ''
  $('login-error').textContent = message
  $('login-view').hidden = false
  $('tasks-view').hidden = true
  setStatus('signed-out', 'not signed in')
}

$('logout-button').addEventListener('click', () => {
  // The refresh token is revoked with the access token: a stored copy can sign nobody in again.
  const signedOut = socket ? typed().auth.logout({ refreshToken }) : Promise.resolve()
  void signedOut.catch(() => {}).finally(() => signOut())
})

// A reload keeps the session: the stored refresh token gets a new pair.
const stored = sessionStorage.getItem(SESSION_KEY)
if (stored !== null) {
  const { refreshToken: token, username } = JSON.parse(stored) as { refreshToken: string; username: string }
  refreshToken = token
  $('me').textContent = username
  busy('Signing in…', async () => {
    await renew(username)
    await signedIn(username)
  })
}
