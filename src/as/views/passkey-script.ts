/**
 * The pages' only script, served at `/assets/passkeys.js` and allowed by the
 * CSP of the pages that load it by its exact URL (no inline script anywhere).
 * It runs the WebAuthn ceremonies for the passkey forms (views/passkeys.ts):
 * asks `passkey-options` (same origin, the form's CSRF token) for the
 * options, calls navigator.credentials.create / get, writes the credential's
 * JSON into the form and submits it. On the login page it also starts a
 * conditional request, so the browser offers passkeys in the username
 * field's autofill where it can (WebAuthn Level 3, 5.1.4 mediation),
 * except on a page reporting a refused sign-in, where the button retries.
 * Plain ES2020, no dependencies; every binary field is base64url.
 */
export const PASSKEY_SCRIPT = `'use strict';
(function () {
  if (!window.PublicKeyCredential || !navigator.credentials) return;
  var forms = document.querySelectorAll('form[data-passkey]');
  if (forms.length === 0) return;

  function toBytes(s) {
    var b64 = s.replace(/-/g, '+').replace(/_/g, '/');
    var bin = atob(b64 + '==='.slice((b64.length + 3) % 4));
    var out = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out.buffer;
  }
  function toText(buf) {
    var bytes = new Uint8Array(buf), bin = '';
    for (var i = 0; i < bytes.length; i++) bin += String.fromCharCode(bytes[i]);
    return btoa(bin).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
  }
  function descriptors(list) {
    return (list || []).map(function (c) { return { type: c.type, id: toBytes(c.id), transports: c.transports }; });
  }
  function creation(o) {
    var pk = Object.assign({}, o, { challenge: toBytes(o.challenge), user: Object.assign({}, o.user, { id: toBytes(o.user.id) }), excludeCredentials: descriptors(o.excludeCredentials) });
    delete pk.hints;
    return pk;
  }
  function request(o) {
    var pk = Object.assign({}, o, { challenge: toBytes(o.challenge), allowCredentials: descriptors(o.allowCredentials) });
    delete pk.hints;
    return pk;
  }
  function credentialJson(c) {
    var r = c.response, json = { id: c.id, rawId: toText(c.rawId), type: c.type, response: { clientDataJSON: toText(r.clientDataJSON) } };
    if (r.attestationObject) {
      json.response.attestationObject = toText(r.attestationObject);
      json.response.transports = typeof r.getTransports === 'function' ? r.getTransports() : [];
    } else {
      json.response.authenticatorData = toText(r.authenticatorData);
      json.response.signature = toText(r.signature);
      if (r.userHandle) json.response.userHandle = toText(r.userHandle);
    }
    return JSON.stringify(json);
  }
  function options(form, purpose) {
    var body = new URLSearchParams({ purpose: purpose, csrf: form.elements.namedItem('csrf').value });
    return fetch('passkey-options', { method: 'POST', body: body, credentials: 'same-origin', headers: { accept: 'application/json' } }).then(function (res) {
      if (!res.ok) throw new Error('options ' + res.status);
      return res.json();
    });
  }
  function say(form, text) {
    var p = form.querySelector('[data-passkey-error]');
    if (!p) return;
    p.textContent = text;
    p.hidden = text === '';
  }
  function submitWith(form, credential) {
    form.elements.namedItem('credential').value = credentialJson(credential);
    form.submit();
  }

  var conditional = null;
  function ceremony(form, mode) {
    var purpose = form.getAttribute('data-passkey');
    return options(form, purpose).then(function (o) {
      if (purpose === 'register') return navigator.credentials.create({ publicKey: creation(o) });
      var args = { publicKey: request(o) };
      if (mode === 'conditional') {
        conditional = new AbortController();
        args.mediation = 'conditional';
        args.signal = conditional.signal;
      }
      return navigator.credentials.get(args);
    }).then(function (credential) {
      if (credential) submitWith(form, credential);
    });
  }

  forms.forEach(function (form) {
    form.hidden = false;
    form.addEventListener('submit', function (event) {
      if (form.elements.namedItem('credential').value !== '') return;
      event.preventDefault();
      say(form, '');
      if (conditional) conditional.abort();
      ceremony(form, 'modal').catch(function (err) {
        if (err && err.name === 'AbortError') return;
        say(form, err && err.name === 'NotAllowedError' ? 'The passkey request was cancelled or timed out. Try again.' : 'Your browser could not use a passkey here. Try again.');
      });
    });
    // Autofill, unless this page reports a refused sign-in: then the person chooses again (the button), and a refused passkey is not offered in a loop.
    var refused = document.querySelector('.alert[role="alert"]:not([data-passkey-error])') !== null;
    if (form.getAttribute('data-passkey') === 'sign-in' && !refused && typeof PublicKeyCredential.isConditionalMediationAvailable === 'function') {
      PublicKeyCredential.isConditionalMediationAvailable().then(function (yes) {
        if (yes) return ceremony(form, 'conditional');
      }).catch(function () {});
    }
  });
})();
`
