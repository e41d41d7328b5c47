/*
 * report.js — draws lmshim's HTML report from the JSON object in
 * <script id="lms-data"> (written by html.c; this file is compiled into the
 * lmshim command by embed.c). No network: everything is in the page.
 *
 * The page states what it drew in data attributes, for people and for the
 * browser test: body[data-status] ("ok" or "error"), body[data-errors],
 * #timeline[data-points] (points of the panel's timeline), #sites[data-sites],
 * #curve[data-points] (points drawn on the budget curve). With #selftest in
 * the address it also drives its own controls (zoom, reset, rank switch,
 * metric switch) and writes the results into #selftest.
 */
(function () {
  'use strict';
  var errors = 0;
  window.addEventListener('error', function (e) {
    errors++;
    document.body.setAttribute('data-errors', String(errors));
    document.body.setAttribute('data-status', 'error');
    var p = document.createElement('pre');
    p.className = 'error';
    p.textContent = 'error: ' + e.message;
    document.body.appendChild(p);
  });

  var D = JSON.parse(document.getElementById('lms-data').textContent);
  var COLORS = ['#1f77b4', '#2ca02c', '#ff7f0e'];
  var NAMES = ['on the device', 'resident managed', 'off the device'];
  var SERIES_COLORS = { min: '#000', bound: '#2ca02c', lookahead: '#1f77b4', lru: '#d62728', none: '#9467bd' };
  var SERIES_LABELS = { min: 'optimal order (Belady\'s MIN)',
                        bound: 'lower bound, reads in place allowed (evictions not counted)' };

  /* ---- helpers ---- */
  function el(tag, attrs, parent, text) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function svg(tag, attrs, parent, text) {
    var e = document.createElementNS('http://www.w3.org/2000/svg', tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function bytes(b) {
    var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], i = 0;
    b = Number(b);
    while (Math.abs(b) >= 1024 && i < u.length - 1) { b /= 1024; i++; }
    return (i && Math.abs(b) < 100 ? b.toPrecision(3) : String(Math.round(b))) + ' ' + u[i];
  }
  function ms(b) { return b / (D.link_gbps * 1e9) * 1e3; }
  function msText(b) { var m = ms(b); return (m >= 100 ? m.toFixed(0) : m.toPrecision(3)) + ' ms'; }
  function secs(t) { return t >= 1 ? t.toFixed(3) + ' s' : (t * 1e3).toPrecision(4) + ' ms'; }
  /* A size for LMS_LIMIT, rounded up to whole MiB (G when whole GiB). */
  function limitText(b) {
    var m = Math.ceil(b / 1048576);
    return m % 1024 === 0 ? (m / 1024) + 'G' : m + 'M';
  }
  /* Index of the last element of sorted a[0..n) that is <= x (-1: none). */
  function lastAtOrBefore(a, x) {
    var lo = 0, hi = a.length;
    while (lo < hi) { var m = (lo + hi) >> 1; if (a[m] <= x) lo = m + 1; else hi = m; }
    return lo - 1;
  }

  /* ---- the page's frame ---- */
  var panels = [];
  D.ranks.forEach(function (rk) { rk.panels.forEach(function (p) { panels.push({ rank: rk, p: p }); }); });
  document.body.setAttribute('data-panels', String(panels.length));
  var header = el('header', {}, document.body);
  el('h1', {}, header, 'lmshim report');
  var pick = el('select', { id: 'panel', 'aria-label': 'rank and device' }, header);
  panels.forEach(function (x, i) {
    el('option', { value: String(i) }, pick, 'rank ' + x.rank.rank + ' · device ' + x.p.dev);
  });
  var where = el('span', { class: 'note' }, header);
  var summary = el('section', { id: 'summary' }, document.body);
  var tl = el('section', { id: 'timeline' }, document.body);
  el('h2', {}, tl, 'Memory over time');
  var legend = el('div', { class: 'legend' }, tl);
  NAMES.forEach(function (n, i) {
    var s = el('span', {}, legend);
    el('i', { style: 'background:' + COLORS[i] }, s);
    s.appendChild(document.createTextNode(n));
  });
  [['#777', 'budget'], ['#17becf', 'fetched (below the axis, up)'], ['#d62728', 'evicted (down)'],
   ['#ff7f0e', '▼ fallback / out of memory']].forEach(function (x) {
    var s = el('span', {}, legend);
    el('i', { style: 'background:' + x[0] }, s);
    s.appendChild(document.createTextNode(x[1]));
  });
  var width = Math.max(600, Math.min(1160, (window.innerWidth || 1200) - 40));
  var canvas = el('canvas', { width: String(width), height: '330' }, tl);
  var tlnote = el('div', { class: 'note' }, tl);
  var sites = el('section', { id: 'sites' }, document.body);
  el('h2', {}, sites, 'Allocation sites');
  var bar = el('div', {}, sites);
  var byPeak = el('button', { id: 'by-peak' }, bar, 'by peak bytes');
  var byMoved = el('button', { id: 'by-moved' }, bar, 'by bytes moved over the link');
  var sitesNote = el('span', { class: 'note' }, bar);
  var flame = el('div', { id: 'flame' }, sites);
  var curve = el('section', { id: 'curve' }, document.body);
  el('h2', {}, curve, 'Budget curve: bytes moved per step against the budget');
  var curveNote = el('div', { class: 'note' }, curve);
  var curveLegend = el('div', { class: 'legend' }, curve);
  var curveSvg = svg('svg', { width: String(width), height: '300' }, curve);
  var curveTable = el('table', {}, curve);
  var tip = el('div', { id: 'tip' }, document.body);

  var cur = 0, view = null, metric = 'peak', flameRoot = null;

  /* ---- summary ---- */
  function drawSummary() {
    var rk = panels[cur].rank, p = panels[cur].p, c = p.curve;
    summary.innerHTML = '';
    el('h2', {}, summary, 'Summary');
    var ul = el('ul', {}, summary);
    el('li', {}, ul, 'Peak on the device: ' + bytes(p.peak) + ' of a budget of ' + bytes(p.budget) +
       ' (the device has ' + bytes(p.physical) + ').');
    el('li', p.fallbacks || p.oom ? { class: 'warn' } : {}, ul, 'Placements: ' + p.allocs[0] + ' device, ' +
       p.allocs[1] + ' managed, ' + p.allocs[2] + ' host, ' + p.allocs[3] + ' vmm, ' + p.allocs[4] +
       ' pinned; ' + p.fallbacks + ' fallbacks (device requests that did not fit), ' + p.oom +
       ' out-of-memory answers.');
    el('li', {}, ul, 'Moved over the link: ' + bytes(p.prefetched) + ' fetched, ' + bytes(p.evicted) +
       ' evicted, in ' + p.launches + ' launches (≈ ' + msText(p.prefetched + p.evicted) + ' at ' +
       D.link_gbps + ' GB/s).');
    el('li', {}, ul, 'Fragmentation: at most ' + bytes(p.holes) + ' in holes between live device chunks and ' +
       bytes(p.rounding) + ' lost to rounding' + (p.peak ? ' (' + (100 * (p.holes + p.rounding) / p.peak).toFixed(1) +
       '% of the peak).' : '.'));
    var tips = [];
    if (c && c.launches > 0) {
      var byName = Object.create(null);   /* names from the trace: no inherited members */
      c.series.forEach(function (s) { byName[s.name] = s; });
      var mine = byName[rk.policy] || c.series[1] || c.series[0], min = byName.min;
      var moved = function (s, at) { var a = s[at || 'at_current']; return a.fetched + a.evicted + a.remote; };
      var stepText = c.skip ? 'each step (' + c.period + ' launches)' : 'the traced run';
      if (c.need > c.current && moved(mine) > 0) {
        var there = moved(min, 'at_need') === 0 ? 'would move nothing' :
          'would evict nothing and read nothing in place (left: each chunk\'s first fetch, ' +
          bytes(moved(min, 'at_need')) + ')';
        var atCurrent = 'At the current budget (' + bytes(c.current) + ') ' + stepText + ' moves ' +
          bytes(moved(mine)) + ' ≈ ' + msText(moved(mine)) + ' with LMS_POLICY=' + mine.name +
          ' (the optimal order: ' + bytes(moved(min)) + ').';
        if (p.physical && c.need > p.physical) {
          var first = moved(min, 'at_need');
          tips.push((first === 0 ? 'Moving nothing' : 'Fetching each chunk only once (' + bytes(first) +
                    ', no eviction, nothing read in place)') + ' takes a budget of ' + bytes(c.need) +
                    ' even in the optimal order (Belady\'s MIN), more than the ' + bytes(p.physical) +
                    ' the device has: the step must move more data here. ' + atCurrent);
        } else {
          tips.push('LMS_LIMIT=' + limitText(c.need) + ' ' + there + ': the smallest budget at which even ' +
                    'the optimal order (Belady\'s MIN) evicts nothing; LMS_POLICY=' + mine.name + ' would move ' +
                    bytes(moved(mine, 'at_need')) + ' there. ' + atCurrent);
        }
      }
      var best = null;
      c.series.forEach(function (s) {
        if (s.name !== 'min' && s.name !== 'bound' && (!best || moved(s) < moved(best))) best = s;
      });
      if (best && best !== mine && moved(best) < 0.9 * moved(mine)) {
        tips.push('LMS_POLICY=' + best.name + ' moves ' + bytes(moved(best)) + ' in ' + stepText + ' instead of ' +
                  bytes(moved(mine)) + ' (LMS_POLICY=' + mine.name + ') at the current budget: ≈ ' +
                  msText(moved(mine) - moved(best)) + ' less on the link.');
      }
      if (!tips.length && moved(mine) === 0 && c.need && c.need < 0.8 * c.current) {
        tips.push('Nothing moves at this budget. LMS_LIMIT=' + limitText(c.need) + ' would still move nothing ' +
                  'and leave ' + bytes(c.current - c.need) + ' of the budget to other work.');
      }
    }
    if (tips.length < 2 && p.fallbacks > 0) {
      tips.push(p.fallbacks + ' device requests did not fit and went to LMS_MODE memory: raising LMS_LIMIT ' +
                '(or LMS_FRAC, which decides when large chunks go to managed memory) keeps them on the device.');
    }
    if (!tips.length) {
      tips.push('Nothing to change: ' + (c && c.skip ? 'after the first step (warm-up) ' : '') +
                'nothing moves over the link at the current budget, and nothing fell back.');
    }
    tips.slice(0, 2).forEach(function (t) { el('li', { class: 'tip' }, ul, t); });
    if (panels.length > 1) {   /* every rank and device at a glance; a click shows one */
      var table = el('table', { id: 'overview' }, summary), head = el('tr', {}, table);
      ['rank · device', 'peak', 'budget', 'fetched', 'evicted', 'fallbacks', 'no eviction from'].forEach(
        function (h) { el('th', {}, head, h); });
      panels.forEach(function (x, i) {
        var tr = el('tr', { style: 'cursor:pointer' + (i === cur ? ';font-weight:600' : '') }, table);
        [x.rank.rank + ' · ' + x.p.dev, bytes(x.p.peak), bytes(x.p.budget), bytes(x.p.prefetched),
         bytes(x.p.evicted), String(x.p.fallbacks), x.p.curve ? bytes(x.p.curve.need) : '?'].forEach(
          function (v) { el('td', {}, tr, v); });
        tr.addEventListener('click', function () { show(i); });
      });
    }
    summary.setAttribute('data-tips', String(Math.min(tips.length, 2)));
    summary.setAttribute('data-need', c ? String(c.need) : '0');
  }

  /* ---- timeline ---- */
  var L = 72, R = 12, TOP = 14, PH = 240, STRIP = 50;
  function ymaxOf(p) {
    var m = p.budget || 1;
    for (var i = 0; i < p.v.length; i += 3) if (p.v[i + 1] > m) m = p.v[i + 1];
    return m;
  }
  function xOf(t) { return L + (t - view.t0) / (view.t1 - view.t0) * (width - L - R); }
  function tOf(x) { return view.t0 + (x - L) / (width - L - R) * (view.t1 - view.t0); }
  function drawTimeline(select) {
    var p = panels[cur].p, g = canvas.getContext('2d'), pw = width - L - R;
    var ymax = ymaxOf(p), y = function (v) { return TOP + PH - v / ymax * PH; };
    g.clearRect(0, 0, width, canvas.height);
    g.fillStyle = '#fff';
    g.fillRect(0, 0, width, canvas.height);
    g.strokeStyle = '#333';
    g.strokeRect(L, TOP, pw, PH);
    g.fillStyle = '#333';
    g.font = '11px sans-serif';
    g.textAlign = 'right';
    for (var k = 0; k <= 4; k++) {
      g.fillText(bytes(ymax * k / 4), L - 4, y(ymax * k / 4) + 4);
      g.strokeStyle = '#eee';
      g.beginPath(); g.moveTo(L, y(ymax * k / 4)); g.lineTo(L + pw, y(ymax * k / 4)); g.stroke();
    }
    for (k = 0; k <= 5; k++) {
      var tk = view.t0 + (view.t1 - view.t0) * k / 5;
      g.textAlign = k === 0 ? 'left' : k === 5 ? 'right' : 'center';
      g.fillText(secs(tk), L + pw * k / 5, TOP + PH + STRIP + 16);
    }
    var T = p.t, V = p.v;
    var i0 = Math.max(0, lastAtOrBefore(T, view.t0)), i1 = lastAtOrBefore(T, view.t1);
    var visible = 0;
    for (var c = 0; c < 3; c++) {
      g.strokeStyle = COLORS[c];
      g.lineWidth = 1.5;
      g.beginPath();
      var prev = i0 < T.length && T[i0] <= view.t0 ? V[i0 * 9 + c * 3 + 2] : 0, col = -1, mn = 0, mx = 0, last = 0;
      g.moveTo(L, y(prev));
      var flush = function () {
        if (col < 0) return;
        g.lineTo(col, y(prev)); g.lineTo(col, y(mn)); g.lineTo(col, y(mx)); g.lineTo(col, y(last));
        prev = last;
      };
      for (var i = i0; i <= i1; i++) {
        if (T[i] < view.t0) continue;
        if (c === 0) visible++;
        var x = Math.round(xOf(T[i])), b = i * 9 + c * 3;
        if (x !== col) { flush(); col = x; mn = V[b]; mx = V[b + 1]; }
        mn = Math.min(mn, V[b]); mx = Math.max(mx, V[b + 1]); last = V[b + 2];
      }
      flush();
      g.lineTo(L + pw, y(prev));
      g.stroke();
    }
    if (p.budget) {
      g.strokeStyle = '#777';
      g.setLineDash([5, 4]);
      g.beginPath(); g.moveTo(L, y(p.budget)); g.lineTo(L + pw, y(p.budget)); g.stroke();
      g.setLineDash([]);
    }
    /* fetches up, evictions down, per pixel column, in the strip below */
    var M = p.moves, cols = {}, top = 1;
    for (i = 0; i < M.length; i += 3) {
      if (M[i] < view.t0 || M[i] > view.t1) continue;
      x = Math.round(xOf(M[i]));
      var e = cols[x] || (cols[x] = [0, 0]);
      e[0] += M[i + 1]; e[1] += M[i + 2];
      top = Math.max(top, e[0], e[1]);
    }
    var mid = TOP + PH + STRIP / 2;
    g.strokeStyle = '#ccc';
    g.beginPath(); g.moveTo(L, mid); g.lineTo(L + pw, mid); g.stroke();
    for (var cx in cols) {
      var h0 = cols[cx][0] / top * (STRIP / 2 - 3), h1 = cols[cx][1] / top * (STRIP / 2 - 3);
      g.fillStyle = '#17becf'; g.fillRect(+cx, mid - h0, 2, h0);
      g.fillStyle = '#d62728'; g.fillRect(+cx, mid, 2, h1);
    }
    g.textAlign = 'right';
    g.fillStyle = '#333';
    g.fillText('moved', L - 4, mid + 4);
    for (i = 0; i < p.marks.length; i += 2) {
      if (p.marks[i] < view.t0 || p.marks[i] > view.t1) continue;
      x = xOf(p.marks[i]);
      g.fillStyle = p.marks[i + 1] === 'o' ? '#d62728' : '#ff7f0e';
      g.beginPath(); g.moveTo(x - 4, TOP - 8); g.lineTo(x + 4, TOP - 8); g.lineTo(x, TOP); g.fill();
    }
    if (select) {
      g.fillStyle = 'rgba(31,119,180,0.15)';
      g.fillRect(Math.min(select[0], select[1]), TOP, Math.abs(select[1] - select[0]), PH);
    }
    tl.setAttribute('data-points', String(p.points));
    tl.setAttribute('data-view-points', String(visible));
    tl.setAttribute('data-rank', String(panels[cur].rank.rank));
    tl.setAttribute('data-dev', String(p.dev));
    tl.setAttribute('data-t0', String(view.t0));
    tl.setAttribute('data-t1', String(view.t1));
    tlnote.textContent = p.samples + ' samples' + (p.exact ? '' : ', drawn as ' + p.points +
      ' time buckets (smallest, largest and last value of each)') + '; ' + visible + ' points in view. ' +
      'Wheel: zoom · drag: zoom to a range · double-click: whole run.';
  }
  function zoomTo(t0, t1) {
    var full = panels[cur].p.t1, span = Math.max(t1 - t0, full * 1e-7, 1e-9);
    t0 = Math.max(0, t0); t1 = Math.min(full, t0 + span);
    view = { t0: t0, t1: t1 };
    drawTimeline();
  }
  function reset() { view = { t0: 0, t1: panels[cur].p.t1 }; drawTimeline(); }
  function canvasX(ev) { return ev.clientX - canvas.getBoundingClientRect().left; }
  canvas.addEventListener('wheel', function (ev) {
    ev.preventDefault();
    var t = tOf(canvasX(ev)), f = ev.deltaY < 0 ? 0.7 : 1 / 0.7;
    zoomTo(t - (t - view.t0) * f, t + (view.t1 - t) * f);
  });
  var dragFrom = null;
  canvas.addEventListener('mousedown', function (ev) { dragFrom = canvasX(ev); });
  canvas.addEventListener('mousemove', function (ev) {
    var x = canvasX(ev);
    if (dragFrom !== null) { drawTimeline([dragFrom, x]); return; }
    var p = panels[cur].p, i = lastAtOrBefore(p.t, tOf(x));
    if (x < L || x > width - R || i < 0) { tip.style.display = 'none'; return; }
    tip.style.display = 'block';
    tip.style.left = (ev.clientX + 12) + 'px';
    tip.style.top = (ev.clientY + 12) + 'px';
    tip.textContent = secs(tOf(x)) + '\n' + NAMES.map(function (n, c) {
      return n + ': ' + bytes(p.v[i * 9 + c * 3 + 2]);
    }).join('\n');
  });
  canvas.addEventListener('mouseleave', function () { tip.style.display = 'none'; });
  window.addEventListener('mouseup', function (ev) {
    if (dragFrom === null) return;
    var a = dragFrom, b = canvasX(ev);
    dragFrom = null;
    if (Math.abs(b - a) > 4) zoomTo(tOf(Math.min(a, b)), tOf(Math.max(a, b)));
    else drawTimeline();
  });
  canvas.addEventListener('dblclick', reset);

  /* ---- sites: icicle graph, outermost frame on top ---- */
  /* The key a frame merges by: a named native frame by function and module
   * (return addresses in one function merge), anything else as written. */
  function frameKey(f) {
    var m = /^(.*) \(([^()]*)\+0x[0-9a-fA-F]+\)$/.exec(f);
    if (m && m[1] !== '?') return m[1] + ' (' + m[2].split('/').pop() + ')';
    if (m) return '? (' + m[2].split('/').pop() + ')';
    return f;
  }
  function isPython(f) { return /\.py[:)\s]|\.py$/.test(f); }
  /* Frames are keys of maps without a prototype: a frame named like one of
   * Object's members ("__proto__", "constructor") is a frame like any other. */
  function buildTree(rk) {
    var root = { name: 'all sites', value: 0, kids: Object.create(null), list: [], parent: null };
    rk.sites.forEach(function (s) {
      var w = metric === 'peak' ? s.peak : s.moved;
      if (!w) return;
      var node = root, frames = s.frames.length ? s.frames.slice().reverse() : ['(no stack)'];
      root.value += w;
      frames.forEach(function (f) {
        var k = frameKey(f);
        var kid = node.kids[k];
        if (!kid) {
          kid = node.kids[k] = { name: k, full: f, value: 0, kids: Object.create(null), list: [], parent: node };
          node.list.push(kid);
        }
        kid.value += w;
        node = kid;
      });
    });
    return root;
  }
  function hue(s) { var h = 0; for (var i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) >>> 0; return h; }
  function drawSites() {
    var rk = panels[cur].rank, tree = buildTree(rk), W = width;
    var root = tree;
    if (flameRoot) {   /* keep the zoomed node across redraws when it still exists */
      var path = [], n = flameRoot;
      while (n.parent) { path.unshift(n.name); n = n.parent; }
      path.forEach(function (k) { if (root && root.kids[k]) root = root.kids[k]; });
      if (root === tree && path.length) flameRoot = null;
    }
    flame.innerHTML = '';
    var drawn = 0, depth = 0;
    function lay(node, x, w, d, label) {
      if (w < 1) return;
      var div = el('div', { title: (node.full || node.name) + '\n' + bytes(node.value) }, flame,
                   (label || node.name) + ' · ' + bytes(node.value));
      var h = hue(node.name);
      div.style.left = x + 'px'; div.style.width = w + 'px'; div.style.top = (d * 17) + 'px';
      div.style.background = isPython(node.full || '') ? 'hsl(' + (200 + h % 40) + ',60%,80%)'
                                                       : 'hsl(' + (10 + h % 50) + ',75%,' + (72 + h % 12) + '%)';
      if (isPython(node.full || '')) div.className = 'py';
      div.addEventListener('click', function () {
        flameRoot = node === root && node.parent ? node.parent : (node === root ? null : node);
        if (flameRoot && !flameRoot.parent) flameRoot = null;
        drawSites();
      });
      drawn++;
      depth = Math.max(depth, d + 1);
      var at = x;
      node.list.slice().sort(function (a, b) { return b.value - a.value; }).forEach(function (k) {
        var kw = node.value ? k.value / node.value * w : 0;
        lay(k, at, kw, d + 1);
        at += kw;
      });
    }
    if (root.value) lay(root, 0, W - 2, 0, root === tree ? 'all sites' : root.name);
    flame.style.height = Math.max(depth * 17 + 2, 20) + 'px';
    flame.style.width = (W - 2) + 'px';
    if (!root.value) el('span', { class: 'note' }, flame, metric === 'peak' ?
      'No allocation stacks in this trace (run with LMS_STACKS=16).' : 'No site\'s chunks moved over the link.');
    sites.setAttribute('data-sites', String(rk.sites.length));
    sites.setAttribute('data-nodes', String(drawn));
    sites.setAttribute('data-metric', metric);
    sites.setAttribute('data-root', root === tree ? '' : root.name);
    sitesNote.textContent = ' ' + rk.sites.length + ' sites of rank ' + rk.rank + ', weighted by ' +
      (metric === 'peak' ? 'each site\'s peak live bytes' : 'bytes of its managed chunks fetched and evicted') +
      '. Click a frame to zoom, the top row to go back.';
    byPeak.disabled = metric === 'peak';
    byMoved.disabled = metric === 'moved';
  }
  byPeak.addEventListener('click', function () { metric = 'peak'; flameRoot = null; drawSites(); });
  byMoved.addEventListener('click', function () { metric = 'moved'; flameRoot = null; drawSites(); });

  /* ---- budget curve ---- */
  function drawCurve() {
    var c = panels[cur].p.curve;
    curveSvg.innerHTML = '';
    curveTable.innerHTML = '';
    var points = 0;
    if (!c || !c.budgets.length) {
      curveNote.textContent = 'No replay for this device (no peak, or the trace could not be read again).';
      curve.setAttribute('data-points', '0');
      return;
    }
    var W = width, H = 300, cl = 72, cr = 70, ct = 12, cb = 34, pw = W - cl - cr, ph = H - ct - cb;
    var xmax = Math.max(c.budgets[c.budgets.length - 1], c.current, c.need) * 1.04, ymax = 1;
    var mv = function (s, i) { return s.fetched[i] + s.evicted[i] + s.remote[i]; };
    c.series.forEach(function (s) { s.fetched.forEach(function (v, i) { ymax = Math.max(ymax, mv(s, i)); }); });
    ymax *= 1.08;
    var X = function (b) { return cl + b / xmax * pw; }, Y = function (v) { return ct + ph - v / ymax * ph; };
    svg('rect', { x: cl, y: ct, width: pw, height: ph, fill: 'none', stroke: '#333' }, curveSvg);
    for (var k = 0; k <= 4; k++) {
      svg('text', { x: cl - 4, y: Y(ymax * k / 4) + 4, 'text-anchor': 'end' }, curveSvg, bytes(ymax * k / 4));
      svg('text', { x: cl + pw + 4, y: Y(ymax * k / 4) + 4 }, curveSvg, msText(ymax * k / 4));
      svg('text', { x: X(xmax * k / 4), y: ct + ph + 14, 'text-anchor': 'middle' }, curveSvg, bytes(xmax * k / 4));
    }
    svg('text', { x: cl + pw / 2, y: H - 4, 'text-anchor': 'middle' }, curveSvg, 'budget');
    var vline = function (b, color, label, dash) {
      svg('line', { x1: X(b), x2: X(b), y1: ct, y2: ct + ph, stroke: color, 'stroke-dasharray': dash }, curveSvg);
      svg('text', { x: X(b) + 3, y: ct + 12 + (dash ? 0 : 14), fill: color }, curveSvg, label);
    };
    if (c.current) vline(c.current, '#555', 'current ' + bytes(c.current), '5 4');
    if (c.need) vline(c.need, '#0a5', 'no eviction from ' + bytes(c.need), '');
    curveLegend.innerHTML = '';
    c.series.forEach(function (s) {
      var color = SERIES_COLORS[s.name] || '#8c564b';
      svg('polyline', { fill: 'none', stroke: color, 'stroke-width': s.name === 'min' ? 2.5 : 1.5,
                        'stroke-dasharray': s.name === 'bound' ? '6 4' : '',
                        points: c.budgets.map(function (b, i) { return X(b) + ',' + Y(mv(s, i)); }).join(' ') },
          curveSvg);
      c.budgets.forEach(function (b, i) {
        var dot = svg('circle', { cx: X(b), cy: Y(mv(s, i)), r: 3, fill: color, class: 'pt' }, curveSvg);
        svg('title', {}, dot, s.name + ' at ' + bytes(b) + ': ' + bytes(mv(s, i)) + ' per step ≈ ' +
            msText(mv(s, i)) + ' (fetched ' + bytes(s.fetched[i]) + ', evicted ' + bytes(s.evicted[i]) +
            ', read in place ' + bytes(s.remote[i]) + ')');
        points++;
      });
      var item = el('span', {}, curveLegend);
      el('i', { style: 'background:' + color }, item);
      item.appendChild(document.createTextNode(SERIES_LABELS[s.name] || 'LMS_POLICY=' + s.name));
    });
    curve.setAttribute('data-points', String(points));
    curve.setAttribute('data-series', String(c.series.length));
    curveNote.textContent = 'The trace\'s launches replayed at ' + c.budgets.length + ' budgets. ' +
      (c.skip ? 'A step is the repeating sequence of ' + c.period + ' launches; the first of ' +
       (c.steps + 1).toFixed(0) + ' steps is warm-up and not counted. ' :
       'No repeating launch sequence: the whole trace (' + c.launches + ' launches) counts as one step. ') +
      'Moved = fetched + evicted + read in place over the link (chunks that did not fit). Left axis: bytes ' +
      'moved per step; right: their modeled time at ' + D.link_gbps + ' GB/s. Hover a point for its parts.';
    var head = el('tr', {}, curveTable);
    ['per step', 'at the current budget: moved', 'fetched', 'evicted', 'read in place', 'modeled time',
     'at ' + bytes(c.need) + ': moved'].forEach(function (h) { el('th', {}, head, h); });
    c.series.forEach(function (s) {
      var tr = el('tr', {}, curveTable), a = s.at_current, n = s.at_need;
      el('td', {}, tr, s.name === 'min' ? 'optimal (MIN)' : s.name === 'bound' ? 'lower bound (reads in place)' :
                       'LMS_POLICY=' + s.name);
      el('td', {}, tr, bytes(a.fetched + a.evicted + a.remote));
      el('td', {}, tr, bytes(a.fetched)); el('td', {}, tr, bytes(a.evicted)); el('td', {}, tr, bytes(a.remote));
      el('td', {}, tr, msText(a.fetched + a.evicted + a.remote));
      el('td', {}, tr, bytes(n.fetched + n.evicted + n.remote));
    });
  }

  function show(i) {
    cur = i;
    flameRoot = null;
    pick.value = String(i);
    where.textContent = panels[i].rank.path + ' (LMS_POLICY=' + panels[i].rank.policy + ', LMS_LIMIT=' +
      panels[i].rank.limit + ')';
    drawSummary();
    reset();
    drawSites();
    drawCurve();
  }
  pick.addEventListener('change', function () { show(+pick.value); });

  /* ---- self test (#selftest): drives the controls as a user would ---- */
  function selftest() {
    var out = el('pre', { id: 'selftest' }, document.body), fails = 0, checks = 0;
    function check(name, ok) { checks++; if (!ok) fails++; out.textContent += (ok ? 'ok - ' : 'FAIL - ') + name + '\n'; }
    function num(e, a) { return Number(e.getAttribute(a)); }
    var rect = canvas.getBoundingClientRect(), full = num(tl, 'data-t1');
    var before = num(tl, 'data-view-points');
    canvas.dispatchEvent(new WheelEvent('wheel', { deltaY: -120, clientX: rect.left + L + (width - L - R) / 2,
                                                   clientY: rect.top + 100, bubbles: true, cancelable: true }));
    check('wheel zooms in', num(tl, 'data-t1') - num(tl, 'data-t0') < full * 0.75);
    check('zoomed view shows no more points', num(tl, 'data-view-points') <= before);
    canvas.dispatchEvent(new MouseEvent('dblclick', { bubbles: true }));
    check('double-click resets', num(tl, 'data-t0') === 0 && num(tl, 'data-t1') === full);
    var x0 = rect.left + L + (width - L - R) * 0.25, x1 = rect.left + L + (width - L - R) * 0.5;
    canvas.dispatchEvent(new MouseEvent('mousedown', { clientX: x0, clientY: rect.top + 50, bubbles: true }));
    canvas.dispatchEvent(new MouseEvent('mousemove', { clientX: x1, clientY: rect.top + 50, bubbles: true }));
    window.dispatchEvent(new MouseEvent('mouseup', { clientX: x1, clientY: rect.top + 50, bubbles: true }));
    var t0 = num(tl, 'data-t0'), t1 = num(tl, 'data-t1');
    check('drag zooms to the range', Math.abs(t0 - full * 0.25) < full * 0.01 && Math.abs(t1 - full * 0.5) < full * 0.01);
    canvas.dispatchEvent(new MouseEvent('dblclick', { bubbles: true }));
    check('whole run visible again', num(tl, 'data-view-points') === num(tl, 'data-points'));
    byMoved.click();
    check('metric switch', sites.getAttribute('data-metric') === 'moved');
    byPeak.click();
    var first = flame.querySelector('div:nth-child(2)');
    if (first) {
      first.click();
      check('click on a frame zooms the icicle', sites.getAttribute('data-root') !== '');
      flame.querySelector('div').click();
    }
    if (panels.length > 1) {
      var other = panels.length - 1;
      pick.value = String(other);
      pick.dispatchEvent(new Event('change'));
      check('rank switch: timeline', num(tl, 'data-rank') === panels[other].rank.rank &&
            num(tl, 'data-points') === panels[other].p.points);
      check('rank switch: sites', num(sites, 'data-sites') === panels[other].rank.sites.length);
      check('rank switch: summary', summary.textContent.indexOf(bytes(panels[other].p.peak)) >= 0);
      document.querySelectorAll('#overview tr')[1].dispatchEvent(new MouseEvent('click', { bubbles: true }));
      check('rank switch back from the overview', num(tl, 'data-rank') === panels[0].rank.rank &&
            pick.value === '0');
    }
    out.setAttribute('data-checks', String(checks));
    out.setAttribute('data-result', fails || errors ? 'fail' : 'pass');
  }

  if (!panels.length) {
    el('p', {}, document.body, 'The traces hold no device events.');
  } else {
    show(0);
  }
  if (/selftest/.test(location.hash) && panels.length) selftest();
  /* milliseconds from the start of navigation to the drawn page */
  document.body.setAttribute('data-ms', performance.now().toFixed(0));
  if (!errors) document.body.setAttribute('data-status', 'ok');
  document.body.setAttribute('data-errors', String(errors));
})();
