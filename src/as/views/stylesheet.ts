/**
 * The only stylesheet of the server-rendered pages, served at
 * `/assets/bearward.css`. The pages' CSP allows styles from 'self' only (no
 * inline styles, no scripts), so everything visual lives here.
 */
export const STYLESHEET = `
:root {
  color-scheme: light dark;
  --bg: #f3f4f7;
  --card: #ffffff;
  --text: #1b1f27;
  --muted: #5b6372;
  --border: #dde1e8;
  --accent: #2f5bd3;
  --accent-text: #ffffff;
  --accent-hover: #2449b0;
  --focus: #7aa2ff;
  --danger-bg: #fdecec;
  --danger-text: #a1232b;
  --danger-border: #f4c2c5;
  --ok-bg: #e8f6ee;
  --ok-text: #1d6b3e;
  --code-bg: #eef1f8;
  --shadow: 0 1px 2px rgba(16, 24, 40, .06), 0 8px 24px rgba(16, 24, 40, .08);
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #0f1218;
    --card: #181c24;
    --text: #e7e9ee;
    --muted: #a0a8b8;
    --border: #2c323e;
    --accent: #6f93ff;
    --accent-text: #0b1020;
    --accent-hover: #8eaaff;
    --focus: #9db7ff;
    --danger-bg: #3a1a1d;
    --danger-text: #ffb4b9;
    --danger-border: #5c2a2f;
    --ok-bg: #15301f;
    --ok-text: #9fe0b5;
    --code-bg: #222836;
    --shadow: 0 1px 2px rgba(0, 0, 0, .4), 0 8px 24px rgba(0, 0, 0, .35);
  }
}
*, *::before, *::after { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; text-size-adjust: 100%; }
body {
  margin: 0;
  min-height: 100vh;
  display: flex;
  flex-direction: column;
  align-items: center;
  justify-content: flex-start;
  padding: 6vh 16px 32px;
  background: var(--bg);
  color: var(--text);
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, "Noto Sans", sans-serif;
  font-size: 16px;
  line-height: 1.5;
}
main.card {
  width: 100%;
  max-width: 420px;
  background: var(--card);
  border: 1px solid var(--border);
  border-radius: 14px;
  box-shadow: var(--shadow);
  padding: 28px 24px 24px;
}
.brand {
  display: flex;
  align-items: center;
  gap: 8px;
  margin: 0 0 20px;
  color: var(--muted);
  font-size: .875rem;
  font-weight: 600;
  letter-spacing: .02em;
}
.brand::before {
  content: "";
  width: 14px;
  height: 14px;
  border-radius: 4px;
  background: var(--accent);
}
h1 {
  margin: 0 0 12px;
  font-size: 1.375rem;
  line-height: 1.3;
  font-weight: 650;
  overflow-wrap: anywhere;
}
p { margin: 0 0 16px; }
.lead { color: var(--muted); overflow-wrap: anywhere; }
.lead strong, .client { color: var(--text); font-weight: 600; }
form { margin: 0; }
label {
  display: block;
  margin: 0 0 6px;
  font-size: .9375rem;
  font-weight: 600;
}
.field { margin: 0 0 16px; }
input[type="text"], input[type="password"] {
  display: block;
  width: 100%;
  padding: 11px 12px;
  font: inherit;
  font-size: 1rem;
  color: var(--text);
  background: var(--card);
  border: 1px solid var(--border);
  border-radius: 8px;
}
input.code-input {
  font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace;
  font-size: 1.25rem;
  letter-spacing: .12em;
  text-transform: uppercase;
  text-align: center;
}
input:focus-visible, button:focus-visible, a:focus-visible {
  outline: 3px solid var(--focus);
  outline-offset: 2px;
}
.actions {
  display: flex;
  flex-direction: row-reverse;
  flex-wrap: wrap;
  gap: 10px;
  margin-top: 20px;
}
button {
  flex: 1 1 140px;
  min-height: 44px;
  padding: 10px 16px;
  font: inherit;
  font-weight: 600;
  border-radius: 8px;
  border: 1px solid transparent;
  cursor: pointer;
}
button.primary { background: var(--accent); color: var(--accent-text); }
button.primary:hover { background: var(--accent-hover); }
button.secondary { background: transparent; color: var(--text); border-color: var(--border); }
button.secondary:hover { background: var(--code-bg); }
.alert {
  margin: 0 0 16px;
  padding: 10px 12px;
  border-radius: 8px;
  border: 1px solid var(--danger-border);
  background: var(--danger-bg);
  color: var(--danger-text);
  font-size: .9375rem;
}
.notice {
  margin: 0 0 16px;
  padding: 10px 12px;
  border-radius: 8px;
  background: var(--ok-bg);
  color: var(--ok-text);
  font-size: .9375rem;
}
ul.scopes {
  list-style: none;
  margin: 0 0 16px;
  padding: 0;
  border: 1px solid var(--border);
  border-radius: 10px;
}
ul.scopes li {
  position: relative;
  padding: 12px 12px 12px 40px;
  border-top: 1px solid var(--border);
  overflow-wrap: anywhere;
}
ul.scopes li:first-child { border-top: 0; }
ul.scopes li::before {
  content: "";
  position: absolute;
  left: 15px;
  top: 19px;
  width: 10px;
  height: 10px;
  border-radius: 50%;
  background: var(--accent);
}
ul.scopes .scope-name {
  display: block;
  color: var(--muted);
  font-size: .8125rem;
  font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
}
h2.details-type, h4.details-type { font-size: 1rem; margin: 1rem 0 .25rem; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
pre.detail {
  margin: 0 0 .5rem;
  padding: .5rem .75rem;
  white-space: pre-wrap;
  overflow-wrap: anywhere;
  background: color-mix(in srgb, var(--muted) 12%, transparent);
  border-radius: 6px;
  font-size: .8125rem;
  font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
}
.user-code {
  display: block;
  margin: 0 0 16px;
  padding: 14px 12px;
  text-align: center;
  font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace;
  font-size: 1.75rem;
  font-weight: 650;
  letter-spacing: .16em;
  background: var(--code-bg);
  border-radius: 10px;
}
.fine {
  margin: 16px 0 0;
  color: var(--muted);
  font-size: .8125rem;
  overflow-wrap: anywhere;
}
.fine code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
a { color: var(--accent); }
.client-head {
  display: flex;
  align-items: center;
  gap: 12px;
  margin: 0 0 16px;
  overflow-wrap: anywhere;
}
.client-logo {
  flex: none;
  width: 48px;
  height: 48px;
  object-fit: contain;
  border-radius: 10px;
  border: 1px solid var(--border);
  background: var(--card);
}
.client-links { margin-top: 0; }
form.whoami p {
  margin: 16px 0 0;
  color: var(--muted);
  font-size: .875rem;
  overflow-wrap: anywhere;
}
form.whoami strong { color: var(--text); }
button.link {
  flex: none;
  display: inline;
  min-height: 44px;
  padding: 0 2px;
  border: 0;
  background: none;
  color: var(--accent);
  font-size: inherit;
  font-weight: 600;
  text-decoration: underline;
  text-underline-offset: 2px;
}
button.link:hover { color: var(--accent-hover); }
ul.apps {
  list-style: none;
  margin: 0 0 16px;
  padding: 0;
}
ul.apps > li {
  margin: 0 0 12px;
  padding: 14px;
  border: 1px solid var(--border);
  border-radius: 10px;
  overflow-wrap: anywhere;
}
h2 {
  margin: 24px 0 8px;
  font-size: 1.125rem;
  line-height: 1.3;
}
ul.apps h3 {
  margin: 0;
  font-size: 1.0625rem;
  line-height: 1.3;
}
.section-note { margin: 0 0 12px; }
ul.apps .client-head { margin-bottom: 8px; }
ul.apps .client-logo { width: 32px; height: 32px; border-radius: 8px; }
ul.apps ul.scopes { margin-bottom: 8px; }
ul.apps .when { margin: 0 0 10px; color: var(--muted); font-size: .875rem; }
ul.apps form .actions { margin-top: 0; }
button.danger { background: transparent; color: var(--danger-text); border-color: var(--danger-border); }
button.danger:hover { background: var(--danger-bg); }
.or {
  display: flex;
  align-items: center;
  gap: 12px;
  margin: 22px 0 4px;
  color: var(--muted);
  font-size: .875rem;
}
.or::before, .or::after { content: ""; flex: 1; border-top: 1px solid var(--border); }
form.provider .actions { margin-top: 12px; }
footer {
  margin-top: 20px;
  color: var(--muted);
  font-size: .8125rem;
}
@media (max-width: 380px) {
  body { padding-top: 16px; }
  main.card { padding: 22px 18px 18px; border-radius: 12px; }
}
`.trimStart()
