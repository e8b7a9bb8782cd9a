// The interactive timeline: draws the case's data (JSON in #data) as SVG,
// again on every zoom and pan. Holds are merged per pixel column, so a long
// busy run costs what the screen can show, not what the run did.
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("data").textContent);
  var svg = document.getElementById("svg"), tip = document.getElementById("tip"), box = document.getElementById("tl");
  var AXIS = 22, LANE = 22, VROW = 36;
  function procsOf(ln) {
    if (!ln.procs || !ln.procs.length || ln.name.indexOf("process") === 0) return "";
    return ln.procs.length > 3 ? "processes " + ln.procs[0] + "\u2026" + ln.procs[ln.procs.length - 1]
      : (ln.procs.length > 1 ? "processes " : "process ") + ln.procs.join(", ");
  }
  // The lane names' column: as wide as the longest (about 6.5 px a letter).
  var GUT = Math.min(360, Math.max(130, 12 + 6.5 * Math.max.apply(null, D.lanes.map(function (ln) {
    return ln.name.length + 1 + procsOf(ln).length;
  }).concat([12]))));
  var span = Math.max(D.span, 1), t0 = 0, t1 = span, pinned = null, selected = -1;
  var C = { hold: "#3366cc", past: "#9ab0e0", exp: "#1a7f37", dg: "#e01010", cf: "rgba(245,150,20,0.40)",
            sf: "rgba(245,200,66,0.35)", st: "#8000c0", grid: "#e4e4e4" };

  function esc(s) { return String(s).replace(/[&<>"']/g, function (c) { return "&#" + c.charCodeAt(0) + ";"; }); }
  function sec(us, d) { return (us / 1e6).toFixed(d === undefined ? 3 : d) + " s"; }
  function fname(f) { return f.fault + (f.target ? " on " + f.target : ""); }
  function laneName(l) { return l >= 0 && l < D.lanes.length ? D.lanes[l].name : "?"; }

  // Fault rows: server faults (every lane) stacked in levels above the lanes.
  var serverFaults = [], levels = [];
  D.faults.forEach(function (f, i) {
    if (f.lanes) return;
    var lv = 0;
    while (levels[lv] !== undefined && levels[lv] > f.s) lv++;
    levels[lv] = Math.max(f.e, f.s + 1);
    serverFaults.push({ f: f, i: i, lv: lv });
  });
  var FROWS = levels.length, FROW = 16;
  var top = AXIS + FROWS * FROW + VROW, height = top + D.lanes.length * LANE + 8;
  // Holds come sorted by lane, then start: where each lane's begin, and
  // its longest hold (how far back one may start and still be in view).
  var laneStart = [], laneEnd = [], laneLongest = [];
  D.holds.forEach(function (h, i) {
    if (h.l < 0) return;
    if (laneStart[h.l] === undefined) { laneStart[h.l] = i; laneLongest[h.l] = 0; }
    laneEnd[h.l] = i + 1;
    laneLongest[h.l] = Math.max(laneLongest[h.l], h.e - h.s);
  });

  function width() { return Math.max(box.clientWidth, 400); }
  function plotW() { return width() - GUT - 10; }
  function X(t) { return GUT + (t - t0) / (t1 - t0) * plotW(); }
  function T(x) { return t0 + (x - GUT) / plotW() * (t1 - t0); }
  function laneY(l) { return top + l * LANE; }

  function niceStep(raw) {
    var p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
  }

  function render() {
    var W = width(), pw = plotW(), out = [];
    svg.setAttribute("viewBox", "0 0 " + W + " " + height);
    svg.setAttribute("height", height);
    out.push('<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">' +
      '<line x1="0" y1="0" x2="0" y2="6" stroke="' + C.st + '" stroke-width="1.2"/></pattern>' +
      '<clipPath id="plot"><rect x="' + GUT + '" y="0" width="' + pw + '" height="' + height + '"/></clipPath></defs>');
    // Lane backgrounds and names.
    D.lanes.forEach(function (ln, l) {
      var y = laneY(l);
      if (l % 2) out.push('<rect x="0" y="' + y + '" width="' + W + '" height="' + LANE + '" fill="#fafafa"/>');
      var procs = procsOf(ln), showProcs = procs !== "";
      out.push('<text x="6" y="' + (y + 15) + '"><tspan font-weight="bold">' + esc(ln.name) + '</tspan>' +
        (showProcs ? '<tspan fill="#777"> ' + esc(procs) + '</tspan>' : "") +
        '<title>' + esc(ln.name + (showProcs ? " (" + procs + ")" : "")) + '</title></text>');
    });
    out.push('<text x="6" y="' + (AXIS + FROWS * FROW + 15) + '" font-weight="bold" fill="#a00">violations</text>');
    if (FROWS) out.push('<text x="6" y="' + (AXIS + 12) + '" font-weight="bold" fill="#960">server faults</text>');
    out.push('<g clip-path="url(#plot)">');
    // Time axis and grid.
    var step = niceStep((t1 - t0) / Math.max(pw / 110, 1)), dec = Math.max(0, Math.min(6, -Math.floor(Math.log10(step / 1e6))));
    for (var g = Math.ceil(t0 / step) * step; g <= t1; g += step) {
      var gx = X(g);
      out.push('<line x1="' + gx + '" x2="' + gx + '" y1="' + (AXIS - 4) + '" y2="' + height + '" stroke="' + C.grid + '"/>' +
        '<text x="' + (gx + 2) + '" y="' + (AXIS - 8) + '" fill="#555">' + sec(g, dec) + '</text>');
    }
    var vis = function (s, e) { return e >= t0 && s <= t1; };
    var clampX = function (t) { return Math.max(GUT - 5, Math.min(GUT + pw + 5, X(t))); };
    // Faults: server faults across every lane and labelled in their row;
    // a client's on its lane, labelled there.
    serverFaults.forEach(function (sf) {
      var f = sf.f; if (!vis(f.s, f.e)) return;
      var x0 = clampX(f.s), x1 = Math.max(clampX(f.e), x0 + 2), y = AXIS + sf.lv * FROW;
      out.push('<rect x="' + x0 + '" y="' + top + '" width="' + (x1 - x0) + '" height="' + (height - top) + '" fill="' + C.sf + '"/>');
      out.push('<g class="fault"><rect x="' + x0 + '" y="' + (y + 1) + '" width="' + (x1 - x0) + '" height="' + (FROW - 2) + '" fill="#f0c040" stroke="#b08000"/>' +
        '<text x="' + (Math.max(x0, GUT) + 3) + '" y="' + (y + 12) + '">' + esc(fname(f) + (f.o ? " (never healed)" : "")) + '</text>' +
        '<title>' + esc(fname(f) + ": " + sec(f.s) + " to " + sec(f.e) + (f.o ? ", never healed" : "")) + '</title></g>');
    });
    var labels = []; // drawn over the holds
    D.faults.forEach(function (f) {
      if (!f.lanes || !vis(f.s, f.e)) return;
      var x0 = clampX(f.s), x1 = Math.max(clampX(f.e), x0 + 2);
      f.lanes.forEach(function (l) {
        var y = laneY(l);
        out.push('<g><rect x="' + x0 + '" y="' + y + '" width="' + (x1 - x0) + '" height="' + LANE + '" fill="' + C.cf + '" stroke="#d08000" stroke-dasharray="3,2"/>' +
          '<title>' + esc(fname(f) + ": " + sec(f.s) + " to " + sec(f.e)) + '</title></g>');
        if (x1 - x0 > 60) labels.push('<text x="' + (Math.max(x0, GUT) + 3) + '" y="' + (y + 13) + '" fill="#8a4b00" stroke="#fff" stroke-width="3" paint-order="stroke" font-size="10" pointer-events="none">' + esc(f.fault) + '</text>');
      });
    });
    // Holds, merged per pixel column; a hold alone at this zoom shows its
    // lease: a line to its believed expiry, a tick there, and the part
    // held past it paler.
    var runs = [], cur = null;
    function flush() { if (cur) runs.push(cur); cur = null; }
    for (var l = 0; l < laneStart.length; l++) {
      if (laneStart[l] === undefined) continue;
      // The lane's holds start in order: skip to the first that can reach t0.
      var lo = laneStart[l], hi = laneEnd[l], end = hi;
      while (lo < hi) { var mid = (lo + hi) >> 1; if (D.holds[mid].s < t0 - laneLongest[l]) lo = mid + 1; else hi = mid; }
      for (var i = lo; i < end; i++) {
      var h = D.holds[i];
      if (h.s > t1) break;
      if (h.e < t0) continue;
      var hx0 = X(h.s), hx1 = Math.max(X(h.e), hx0 + 1);
      if (cur && cur.l === h.l && hx0 <= cur.x1 + 1) { cur.x1 = Math.max(cur.x1, hx1); cur.n += Math.max(h.n || 1, 1); cur.h = null; continue; }
      flush();
      cur = { l: h.l, x0: hx0, x1: hx1, n: Math.max(h.n || 1, 1), h: (h.n || 1) > 1 ? null : h };
      }
    }
    flush();
    runs.forEach(function (r) {
      if (r.l < 0) return;
      var y = laneY(r.l) + 5, x0 = Math.max(r.x0, GUT - 5), x1 = Math.min(r.x1, GUT + pw + 5), h = r.h;
      if (!h) {
        out.push('<rect x="' + x0 + '" y="' + y + '" width="' + Math.max(x1 - x0, 1) + '" height="12" fill="' + C.hold + '"><title>' + r.n + ' holds</title></rect>');
        return;
      }
      var title = "process " + h.p + " held " + D.keys[h.k] + " from " + sec(h.s) + (h.o ? ", never released" : " to " + sec(h.e)) +
        (h.x >= 0 ? "; believed its lease ran to " + sec(h.x) + (h.x < h.e ? ", held " + sec(h.e - h.x) + " past it" : "") : "") +
        " (events " + h.g + (h.r >= 0 ? ", " + h.r : "") + ")";
      var xe = h.x >= 0 ? X(h.x) : x1;
      var solid = Math.min(x1, Math.max(x0, xe));
      out.push('<g><rect x="' + x0 + '" y="' + y + '" width="' + Math.max(solid - x0, 1) + '" height="12" fill="' + C.hold + '"/>');
      if (solid < x1) out.push('<rect x="' + solid + '" y="' + y + '" width="' + (x1 - solid) + '" height="12" fill="' + C.past + '" stroke="' + C.hold + '" stroke-dasharray="3,2"/>');
      if (h.x >= 0 && x1 - x0 > 3) {
        var xl = Math.min(xe, GUT + pw + 5);
        out.push('<line x1="' + x0 + '" x2="' + xl + '" y1="' + (y + 14.5) + '" y2="' + (y + 14.5) + '" stroke="' + C.exp + '" stroke-width="1.5"/>');
        if (xe <= GUT + pw + 5) out.push('<line x1="' + xe + '" x2="' + xe + '" y1="' + (y - 3) + '" y2="' + (y + 17) + '" stroke="' + C.exp + '" stroke-width="2"/>');
      }
      out.push('<title>' + esc(title) + '</title></g>');
    });
    // Double grants: the stretch both held, red on both lanes.
    var dg = {};
    D.overlaps.forEach(function (o) {
      if (!vis(o.s, o.e)) return;
      var x0 = clampX(o.s), x1 = Math.max(clampX(o.e), x0 + 2);
      o.lanes.forEach(function (l) {
        if (l < 0) return;
        var k = l + ":" + Math.floor(x0);
        if (dg[k] && dg[k][1] >= x1) return;
        dg[k] = [x0, x1];
        out.push('<rect x="' + x0 + '" y="' + (laneY(l) + 3) + '" width="' + (x1 - x0) + '" height="16" fill="' + C.dg + '" fill-opacity="0.75"/>');
      });
    });
    out.push(labels.join(""));
    // The lab's stalls, hatched over what they may have held up.
    D.stalls.forEach(function (s) {
      if (!vis(s.s, s.e)) return;
      var x0 = clampX(s.s), x1 = Math.max(clampX(s.e), x0 + 2);
      var ls = s.lanes || D.lanes.map(function (_, l) { return l; });
      ls.forEach(function (l) {
        out.push('<rect x="' + x0 + '" y="' + laneY(l) + '" width="' + (x1 - x0) + '" height="' + LANE + '" fill="url(#hatch)"><title>' +
          esc("the lab stalled (" + s.target + "): " + sec(s.s) + " to " + sec(s.e)) + '</title></rect>');
      });
    });
    // Incidents: one marker each, over its span, with its count.
    var vy = AXIS + FROWS * FROW + 2;
    D.incidents.forEach(function (inc, n) {
      if (!vis(inc.s, inc.e)) return;
      var x0 = X(inc.s), x1 = X(inc.e), w = Math.max(x1 - x0, 14);
      if (x1 - x0 < 14) x0 -= (14 - (x1 - x0)) / 2;
      var label = inc.count > 1 ? inc.count + " violations" : "1 violation";
      if (w < label.length * 6 + 6) label = String(inc.count);
      out.push('<g class="inc" data-inc="' + n + '" style="cursor:pointer"><rect x="' + x0 + '" y="' + vy + '" width="' + w + '" height="18" rx="4" fill="' + (n === selected ? "#a00" : C.dg) + '" stroke="#700"/><text x="' + (x0 + w / 2) + '" y="' + (vy + 13) +
        '" fill="#fff" font-weight="bold" text-anchor="middle" pointer-events="none">' + esc(label) + '</text></g>');
      // Zoomed in far enough, each violation of the incident gets its own
      // tick under it, at its last event (when it could be seen).
      if ((x1 - x0) / Math.max(inc.count, 1) >= 12) {
        inc.violations.forEach(function (vi) {
          var vx = X(D.violations[vi].e);
          out.push('<path class="viol" data-v="' + vi + '" d="M' + vx + ' ' + (vy + 21) + 'l5 5l-5 5l-5 -5z" fill="' + C.dg + '" stroke="#700" style="cursor:pointer"/>');
        });
      }
      if (n === selected) {
        inc.lanes.forEach(function (l) {
          out.push('<rect x="' + x0 + '" y="' + laneY(l) + '" width="' + w + '" height="' + LANE + '" fill="none" stroke="#a00" stroke-width="1.5"/>');
        });
      }
    });
    out.push('</g>');
    svg.innerHTML = out.join("");
    document.getElementById("range").textContent = sec(t0) + " \u2013 " + sec(t1) + " of " + sec(span);
  }

  function evLink(ev) {
    var lane = ev.l >= 0 ? laneName(ev.l) : "";
    var what = [ev.what, ev.t >= 0 ? sec(ev.t) : "", lane !== ev.what ? lane : ""].filter(Boolean).join(", ");
    var file = (D.history_file || "history").replace(/^.*\//, "");
    var href = D.history ? D.history + "#i" + ev.i : (D.history_file || "");
    var txt = file + " line " + ev.line;
    return '<span class="ev">' + (href ? '<a href="' + esc(href) + '" title="event ' + ev.i + '">' + esc(txt) + '</a>' : esc(txt)) + '</span> ' + esc(what);
  }
  function violHTML(v) {
    return '<li><b>' + esc(v.class) + '</b>: ' + esc(v.text) + '<ul>' + v.events.map(function (ev) { return '<li>' + evLink(ev) + '</li>'; }).join("") + '</ul></li>';
  }
  function incSummary(inc) {
    var faults = inc.faults.map(function (i) { return fname(D.faults[i]); });
    return inc.count + " violation(s) from " + sec(inc.s) + " to " + sec(inc.e) + ": " +
      inc.classes.map(function (c) { return c.n + " " + c.class; }).join(", ") +
      (faults.length ? "; during " + faults.join(", ") : "; no fault in force") +
      (inc.lanes.length ? "; on " + inc.lanes.map(laneName).join(", ") : "");
  }
  // An incident's violations to show first: one of each class, then the
  // rest in time order.
  function firstOfEach(inc, limit) {
    var seen = {}, first = [], rest = [];
    inc.violations.forEach(function (i) {
      var c = D.violations[i].class;
      if (seen[c]) rest.push(i); else { seen[c] = true; first.push(i); }
    });
    return first.concat(rest).slice(0, limit);
  }
  function incHTML(n, limit) {
    var inc = D.incidents[n], vs = firstOfEach(inc, limit);
    var more = inc.count - vs.length;
    return '<div><b>Incident ' + (n + 1) + '</b> <button data-zoom="' + n + '">zoom to it</button><br>' + esc(incSummary(inc)) +
      '<ul>' + vs.map(function (i) { return violHTML(D.violations[i]); }).join("") + '</ul>' +
      (more > 0 ? '<i>\u2026 and ' + more + ' more (<a href="#inc' + (n + 1) + '">all of them below</a>)</i>' : "") + '</div>';
  }
  function showTip(n, evt, v) {
    tip.innerHTML = v === undefined ? incHTML(n, 6) :
      '<div><b>Incident ' + (n + 1) + '</b>, one of its ' + D.incidents[n].count + ' violations <button data-zoom="' + n + '">zoom to the incident</button><ul>' + violHTML(D.violations[v]) + '</ul></div>';
    tip.hidden = false;
    var r = box.getBoundingClientRect();
    var x = evt.clientX - r.left + 12, y = evt.clientY - r.top + 12;
    tip.style.left = Math.max(0, Math.min(x, r.width - 650)) + "px";
    tip.style.top = y + "px";
  }
  function zoomTo(s, e) {
    var pad = Math.max((e - s) * 0.25, 2000);
    t0 = Math.max(0, s - pad); t1 = Math.min(span, e + pad);
    if (t1 - t0 < 100) t1 = t0 + 100;
    render();
  }
  // later: draw at the next frame (a wheel sends many events a frame).
  var frame = 0;
  function later() { if (!frame) frame = requestAnimationFrame(function () { frame = 0; render(); }); }
  function zoom(f, at, soon) {
    var w = (t1 - t0) * f;
    w = Math.max(100, Math.min(span, w));
    var a = at === undefined ? (t0 + t1) / 2 : at, k = (a - t0) / (t1 - t0);
    t0 = a - k * w; t1 = t0 + w;
    if (t0 < 0) { t1 -= t0; t0 = 0; }
    if (t1 > span) { t0 -= t1 - span; t1 = span; t0 = Math.max(0, t0); }
    if (soon) later(); else render();
  }

  svg.addEventListener("wheel", function (e) {
    e.preventDefault();
    var x = e.offsetX * (width() / svg.clientWidth);
    zoom(e.deltaY < 0 ? 1 / 1.25 : 1.25, x >= GUT ? T(x) : undefined, true);
  }, { passive: false });
  var drag = null;
  svg.addEventListener("mousedown", function (e) { drag = { x: e.clientX, t0: t0, t1: t1, moved: false }; svg.classList.add("drag"); });
  window.addEventListener("mousemove", function (e) {
    if (!drag) return;
    var dx = e.clientX - drag.x;
    if (Math.abs(dx) > 2) drag.moved = true;
    var dt = dx / plotW() * (drag.t1 - drag.t0);
    t0 = drag.t0 - dt; t1 = drag.t1 - dt;
    if (t0 < 0) { t1 -= t0; t0 = 0; }
    if (t1 > span) { t0 -= t1 - span; t1 = span; }
    later();
  });
  window.addEventListener("mouseup", function () { if (drag) svg.classList.remove("drag"); setTimeout(function () { drag = null; }, 0); });
  svg.addEventListener("dblclick", function (e) {
    var x = e.offsetX * (width() / svg.clientWidth);
    if (x >= GUT) zoom(1 / 3, T(x));
  });
  // What a pointer is on: an incident's marker, or one violation's tick.
  function hit(t) {
    var g = t && t.closest && t.closest(".inc, .viol");
    if (!g) return null;
    if (g.classList.contains("viol")) { var v = +g.getAttribute("data-v"); return { n: D.violations[v].incident, v: v }; }
    return { n: +g.getAttribute("data-inc") };
  }
  svg.addEventListener("mouseover", function (e) {
    var h = hit(e.target);
    if (h && pinned === null) showTip(h.n, e, h.v);
  });
  svg.addEventListener("mouseout", function (e) {
    if (hit(e.target) && pinned === null && !hit(e.relatedTarget)) tip.hidden = true;
  });
  svg.addEventListener("click", function (e) {
    if (drag && drag.moved) return;
    var h = hit(e.target);
    if (!h) { pinned = null; tip.hidden = true; tip.classList.remove("pinned"); selected = -1; render(); return; }
    pinned = selected = h.n;
    render();
    showTip(h.n, e, h.v);
    tip.classList.add("pinned");
  });
  document.addEventListener("click", function (e) {
    var b = e.target.closest && e.target.closest("[data-zoom]");
    if (b) { var inc = D.incidents[+b.getAttribute("data-zoom")]; selected = +b.getAttribute("data-zoom"); zoomTo(inc.s, inc.e); return; }
    var z = e.target.getAttribute && e.target.getAttribute("data-z");
    if (z === "in") zoom(1 / 2); else if (z === "out") zoom(2); else if (z === "reset") { t0 = 0; t1 = span; render(); }
  });
  document.addEventListener("keydown", function (e) {
    if (e.key === "+" || e.key === "=") zoom(1 / 2); else if (e.key === "-") zoom(2);
    else if (e.key === "0") { t0 = 0; t1 = span; render(); }
    else if (e.key === "Escape") { pinned = null; tip.hidden = true; selected = -1; render(); }
  });
  window.addEventListener("resize", render);

  // The incidents listed, each with all its violations (those the page keeps).
  var list = document.getElementById("incidents"), h = [];
  h.push("<h2>" + (D.incidents.length ? D.incidents.length + " incident(s)" : "No violation") + (D.violations_cut ? " (" + D.violations_cut + " violations not listed)" : "") + "</h2>");
  if (D.incidents.length) {
    h.push("<table><tr><th>#</th><th>from</th><th>to</th><th>violations</th><th>during</th><th>lanes</th><th></th></tr>");
    D.incidents.forEach(function (inc, n) {
      h.push('<tr id="inc' + (n + 1) + '"><td>' + (n + 1) + "</td><td>" + sec(inc.s) + "</td><td>" + sec(inc.e) + "</td><td>" +
        esc(inc.classes.map(function (c) { return c.n + " " + c.class; }).join(", ")) + "</td><td>" +
        esc(inc.faults.map(function (i) { return fname(D.faults[i]); }).join(", ") || "no fault") + "</td><td>" +
        esc(inc.lanes.map(laneName).join(", ")) + '</td><td><button data-zoom="' + n + '">zoom to it</button></td></tr>' +
        '<tr><td></td><td colspan="6"><details><summary>its ' + inc.violations.length + " violation(s)" + (inc.cut ? " listed, " + inc.cut + " more not" : "") +
        "</summary><ul>" + inc.violations.map(function (i) { return violHTML(D.violations[i]); }).join("") + "</ul></details></td></tr>");
    });
    h.push("</table>");
  }
  // The checker's words name a client by its process id ("client 4"),
  // the lanes by its place in the case: say which is which.
  var renamed = D.lanes.filter(function (ln) {
    return ln.name.indexOf("client ") === 0 && ln.procs && !(ln.procs.length === 1 && "client " + ln.procs[0] === ln.name);
  });
  if (renamed.length) h.unshift("<p class=\"note\">The violations' words name each client by its process id: " + esc(renamed.map(function (ln) {
    return ln.name + " ran as " + (ln.procs.length > 1 ? "processes " : "process ") + ln.procs.join(", ");
  }).join("; ")) + ".</p>");
  if (D.merged) h.push("<p>" + D.merged + " holds are drawn merged with their neighbours (the run has more than the page keeps).</p>");
  list.innerHTML = h.join("");
  render();
  // A link can open the page on a stretch ("#t=2.5-4"), an incident
  // ("#incident=2": zoomed to it, its violations shown) or a violation.
  var m = /t=([\d.]+)-([\d.]+)/.exec(location.hash), mi = /incident=(\d+)/.exec(location.hash);
  // "#event=296": the first violation naming that event, shown.
  var me = /event=(\d+)/.exec(location.hash), ve = -1;
  if (me) D.violations.some(function (v, i) {
    return v.events.some(function (ev) { return ev.i === +me[1]; }) && (ve = i) >= 0;
  });
  if (ve >= 0) mi = [null, String(D.violations[ve].incident + 1)];
  if (m) { t0 = Math.max(0, +m[1] * 1e6); t1 = Math.min(span, Math.max(+m[2] * 1e6, t0 + 100)); render(); }
  if (mi && D.incidents[+mi[1] - 1]) {
    var n = +mi[1] - 1, inc = D.incidents[n];
    selected = pinned = n;
    if (!m) zoomTo(inc.s, inc.e); else render();
    // Under the lanes, which it would hide otherwise.
    var g = svg.querySelector('.inc[data-inc="' + n + '"] rect'), sr = svg.getBoundingClientRect();
    var gr = g ? g.getBoundingClientRect() : sr;
    if (ve >= 0) { var v = D.violations[ve]; zoomTo(v.s, v.e); }
    showTip(n, { clientX: gr.left + gr.width / 2 - 12, clientY: sr.bottom - 12 }, ve >= 0 ? ve : undefined);
    tip.classList.add("pinned");
  }
})();
