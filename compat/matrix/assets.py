"""The page's inline CSS and JS (page.py puts them in the one HTML file; nothing is loaded from anywhere).

The JS only filters columns and opens a cell's checks: the table itself is plain HTML, readable without it.
Cell details come from the JSON island `#matrix-data`: strings are interned (`s`), each cell is
[verdict, fixes, failing, steps, checks] as indices, each check [id, title, verdict, detail, location, evidence,
fix, [[issue title, url], ...]].
"""

CSS = """
:root{--ok:#1a7f37;--ok-bg:#dafbe1;--fix:#7d4e00;--fix-bg:#fff1c2;--ask:#0b4f9c;--ask-bg:#ddf0ff;--no:#a40e26;
--no-bg:#ffe3e6;--na:#57606a;--na-bg:#eaeef2;--line:#d0d7de;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
body{margin:0;color:#1f2328;background:#fff;font-size:14px}
header{background:#f6f8fa;border-bottom:1px solid var(--line);padding:8px 12px}
header h1{font-size:17px;margin:0 0 4px}
header p{margin:2px 0;color:#57606a;font-size:12px}
.filters{display:flex;flex-wrap:wrap;gap:8px;align-items:center;margin-top:6px}
.filters label{font-size:13px}
.legend{display:flex;flex-wrap:wrap;gap:6px;margin-top:6px;font-size:12px}
main{padding:0 0 40px}
.wrap{overflow:auto;max-height:100vh}  /* the table scrolls in here, its head and release column stay */
table{border-collapse:separate;border-spacing:0;font-size:12px}
th,td{border-right:1px solid var(--line);border-bottom:1px solid var(--line);padding:3px 5px;white-space:nowrap}
thead th{position:sticky;top:0;z-index:2;background:#f6f8fa;vertical-align:bottom;font-weight:600}
thead th small{display:block;font-weight:400;color:#57606a}
th.rel{position:sticky;left:0;z-index:1;background:#fff;text-align:left}
thead th.rel{z-index:3;background:#f6f8fa}
tr.engine th{position:sticky;left:0;background:#eaeef2;text-align:left;font-size:13px}
td.c{cursor:pointer;text-align:center}
td.c:focus{outline:2px solid #0969da;outline-offset:-2px}
.ok{color:var(--ok);background:var(--ok-bg)}.fix{color:var(--fix);background:var(--fix-bg)}
.ask{color:var(--ask);background:var(--ask-bg)}.ans{display:block;font-size:.72em;white-space:normal;opacity:.85}.no{color:var(--no);background:var(--no-bg)}.na{color:var(--na);background:var(--na-bg)}
.chip{padding:1px 6px;border-radius:10px;border:1px solid var(--line)}
th.user,td.user{border-left:2px solid #0969da;border-right:2px solid #0969da}
#details{position:fixed;right:0;top:0;bottom:0;width:min(560px,100%);background:#fff;border-left:1px solid var(--line);
box-shadow:-4px 0 12px rgba(0,0,0,.12);overflow:auto;z-index:5;padding:12px 14px;box-sizing:border-box}
#details[hidden]{display:none}
#details h2{font-size:16px;margin:0 30px 6px 0}
#details .close{position:absolute;right:10px;top:8px;font-size:18px;background:none;border:0;cursor:pointer}
#details ol{padding-left:20px}
#details code{font-size:12px;word-break:break-all;white-space:pre-wrap}
.check{border-top:1px solid var(--line);padding:6px 0}
.check .v{font-weight:600;margin-right:6px}
.check p{margin:3px 0;overflow-wrap:anywhere}
.check a{overflow-wrap:anywhere}
footer{padding:10px 12px;color:#57606a;font-size:12px}
footer li{margin:2px 0}
@media (max-width:600px){header h1{font-size:15px}header p.long,.legend .lv{display:none}
#details{top:35%;width:100%;border-left:0;border-top:1px solid var(--line)}}
"""

JS = """
(function(){
  var data = JSON.parse(document.getElementById('matrix-data').textContent);
  var S = data.s;
  function st(i){ return i === null || i === undefined ? null : S[i]; }
  var style = document.getElementById('filter-style');
  var fam = document.getElementById('family'), kind = document.getElementById('kind'), meth = document.getElementById('method');
  function filter(){  // columns hidden by position (nth-child): no cell needs a family attribute
    var rules = [];
    data.families.forEach(function(f, i){
      var mine = f === 'your pair';
      if (!mine && ((fam.value && f !== fam.value) || (kind.value && data.kinds[i] !== kind.value)
                    || (meth.value && data.methods[i] !== meth.value)))
        rules.push('#matrix tr > :nth-child(' + (i + 2) + '):not([colspan]){display:none}');
    });
    style.textContent = rules.join('\\n');
  }
  fam.addEventListener('change', filter); kind.addEventListener('change', filter); meth.addEventListener('change', filter);
  var panel = document.getElementById('details'), body = document.getElementById('details-body');
  function el(tag, cls, text){ var e = document.createElement(tag); if (cls) e.className = cls; if (text !== null && text !== undefined) e.textContent = text; return e; }
  function link(url, text){ var a = el('a', null, text); a.href = url; a.target = '_blank'; a.rel = 'noopener noreferrer'; return a; }
  function list(title, items, code){
    if (!items.length) return null;
    var d = el('div'); d.appendChild(el('h3', null, title)); var ol = el('ol');
    items.forEach(function(t){ var li = el('li'); li.appendChild(el(code ? 'code' : 'span', null, t)); ol.appendChild(li); });
    d.appendChild(ol); return d;
  }
  function show(td){
    var cell = data.cells[+td.dataset.i];
    body.textContent = '';
    body.appendChild(el('h2', null, st(cell[5]) + ' ' + st(cell[6]) + ' \\u00b7 ' + data.columns[cell[7]]));
    var v = el('p'); v.appendChild(el('strong', null, 'verdict: ')); v.appendChild(el('span', 'chip ' + td.dataset.css, st(cell[0]))); body.appendChild(v);
    // each thing once: the ordered fixes (else the fixes' names), then the checks, failing first; a check whose
    // fix is a step above points at it instead of repeating it, and the failing checks are not listed twice
    var steps = cell[3].map(st), fixes = list(steps.length ? 'fix, in this order' : 'fixes', steps.length ? steps : cell[1].map(st), steps.length > 0);
    if (fixes) body.appendChild(fixes);
    var rank = {fail: 0, warn: 1, pass: 2};  // what needs doing first
    cell[4].slice().sort(function(a, b){ return rank[st(data.checks[a][2])] - rank[st(data.checks[b][2])]; }).forEach(function(ci){
      var c = data.checks[ci], box = el('div', 'check ' + ({pass:'ok', fail:'no', warn:'fix'}[st(c[2])] || 'na'));
      var head = el('p'); head.appendChild(el('span', 'v', st(c[2]).toUpperCase())); head.appendChild(el('span', null, st(c[1]))); box.appendChild(head);
      box.appendChild(el('p', null, st(c[3])));
      if (c[5] !== null) { var p = el('p'); p.appendChild(el('span', null, 'evidence: ')); p.appendChild(link(st(c[5]), st(c[4]))); box.appendChild(p); }
      else if (c[4] !== null) box.appendChild(el('p', null, 'at ' + st(c[4])));
      (c[7] || []).forEach(function(iss){ var p = el('p'); p.appendChild(el('span', null, 'issue: ')); p.appendChild(link(st(iss[1]), st(iss[0]))); box.appendChild(p); });
      if (c[6] !== null) {
        var f = el('p'), at = steps.findIndex(function(s){ return s === st(c[6]) || s.indexOf(st(c[6])) === 0; });
        if (at >= 0) f.appendChild(el('span', null, 'fix: step ' + (at + 1) + ' above'));
        else { f.appendChild(el('span', null, 'fix: ')); f.appendChild(el('code', null, st(c[6]))); }
        box.appendChild(f);
      }
      box.dataset.check = st(c[0]);
      body.appendChild(box);
    });
    panel.hidden = false; panel.focus();
  }
  document.querySelector('table').addEventListener('click', function(ev){
    var td = ev.target.closest('td.c'); if (td) show(td);
  });
  document.querySelector('table').addEventListener('keydown', function(ev){
    var td = ev.target.closest('td.c'); if (td && (ev.key === 'Enter' || ev.key === ' ')) { ev.preventDefault(); show(td); }
  });
  document.getElementById('close').addEventListener('click', function(){ panel.hidden = true; });
  document.addEventListener('keydown', function(ev){ if (ev.key === 'Escape') panel.hidden = true; });
})();
"""
