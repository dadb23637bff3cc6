// headroom's dashboard script: keeps the server-rendered page current from the server-sent
// events of /api/events. The page reads without it; it fetches nothing but this origin.
(function () {
  'use strict';
  var live = document.getElementById('live');
  var lastSync = null;
  // The charts are drawn by the server: the whole <main> is fetched again at most this often.
  var CHART_REFRESH_MS = 60000;
  var lastReload = Date.now();

  function pad(n) { return n < 10 ? '0' + n : String(n); }
  function number(n) { return n === null || n === undefined ? '?' : n.toLocaleString('en-US'); }

  // "45 s", "12 min", "2 h 5 min", "3 d 4 h", as the server words it.
  function countdown(ms) {
    var secs = Math.floor(ms / 1000);
    if (secs <= 0) { return 'now'; }
    var d = Math.floor(secs / 86400), h = Math.floor(secs % 86400 / 3600), m = Math.floor(secs % 3600 / 60);
    if (d === 0 && h === 0 && m === 0) { return secs + ' s'; }
    if (d === 0 && h === 0) { return (m + (secs % 60 >= 30 ? 1 : 0)) + ' min'; }
    if (d === 0) { return m === 0 ? h + ' h' : h + ' h ' + m + ' min'; }
    return h === 0 ? d + ' d' : d + ' d ' + h + ' h';
  }

  function times() {
    // The charts' time axes are SVG <text class="clock"> with the same datetime attribute.
    document.querySelectorAll('time.clock, text.clock').forEach(function (el) {
      var t = new Date(el.getAttribute('datetime'));
      if (!isNaN(t.getTime())) { el.textContent = pad(t.getHours()) + ':' + pad(t.getMinutes()); }
    });
    var now = Date.now();
    document.querySelectorAll('time.countdown').forEach(function (el) {
      var t = new Date(el.getAttribute('datetime'));
      if (!isNaN(t.getTime())) { el.textContent = countdown(t.getTime() - now); }
    });
    // An instant that passed reads in its past words ("reset 15:57 — awaiting …"), never "in now".
    document.querySelectorAll('span.when').forEach(function (el) {
      var t = new Date(el.getAttribute('data-at')).getTime();
      if (isNaN(t)) { return; }
      var ahead = el.querySelector('.ahead'), past = el.querySelector('.past');
      if (ahead) { ahead.hidden = t <= now; }
      if (past) { past.hidden = t > now; }
    });
  }

  function text(root, selector, value) {
    var el = root.querySelector(selector);
    if (el && el.textContent !== value) { el.textContent = value; }
  }

  // Fetches the page's <main> again: the server renders it, the script only swaps it in.
  function reload() {
    fetch('/?part=main', { cache: 'no-store' })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(new Error('HTTP ' + r.status)); })
      .then(function (html) { document.querySelector('main').innerHTML = html; lastReload = Date.now(); times(); })
      .catch(function () { live.textContent = 'reconnecting'; });
  }

  // Updates each bucket in place; returns false when the page lacks one (its shape changed).
  function applyQuota(quota) {
    var complete = true;
    var seen = document.querySelectorAll('[data-bucket]').length;
    var count = 0;
    quota.identities.forEach(function (identity) {
      identity.buckets.forEach(function (b) {
        count += 1;
        var key = identity.host + '|' + identity.subject + '|' + b.latest.bucket;
        var el = document.querySelector('[data-bucket="' + CSS.escape(key) + '"]');
        if (!el) { complete = false; return; }
        text(el, '.remaining', number(b.latest.remaining));
        text(el, '.limit', number(b.latest.limit));
        text(el, '.in-flight', String(b.in_flight));
        text(el, '.waiting', String(b.waiting));
        // The server renders the words with live times in them: new words, a new rendering.
        var wait = el.querySelector('.wait');
        if (wait && wait.getAttribute('data-words') !== (b.wait || '')) { complete = false; }
        var fill = el.querySelector('.fill');
        if (fill && b.latest.limit) {
          fill.style.width = Math.min(100, b.latest.remaining / b.latest.limit * 100).toFixed(1) + '%';
        }
      });
    });
    return complete && count === seen;
  }

  function apply(snapshot) {
    var sync = JSON.stringify(snapshot.sync);
    var changedRuns = lastSync !== null && sync !== lastSync;
    lastSync = sync;
    var captured = document.querySelector('.captured time');
    if (captured) { captured.setAttribute('datetime', snapshot.quota.captured_at); }
    var stale = Date.now() - lastReload > CHART_REFRESH_MS;
    if (!applyQuota(snapshot.quota) || changedRuns || stale) { reload(); } else { times(); }
  }

  times();
  setInterval(times, 1000);
  if (!window.EventSource) { return; }
  var source = new EventSource('/api/events');
  source.addEventListener('open', function () { live.textContent = 'live'; });
  source.addEventListener('snapshot', function (e) {
    live.textContent = 'live';
    apply(JSON.parse(e.data));
  });
  source.addEventListener('unavailable', function () { live.textContent = 'database unavailable'; });
  source.onerror = function () { live.textContent = 'reconnecting'; };
}());
