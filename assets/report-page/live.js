(function () {
  'use strict';
  // The live page's script: one EventSource on GET /events; each event updates the sections table and the charts.
  // Event text goes in with textContent only (never parsed as markup). On `run-end` the page reloads: GET / then serves
  // the run's report (the receiver writes it before it answers). A stream refused (429, 503) or dropped is opened again
  // after a growing, jittered wait, for as long as the page is open, from the last event the page has.
  var charts = {};
  window.__charts = charts;
  var palette = JSON.parse(document.getElementById('itb-live-colors').textContent);
  var style = getComputedStyle(document.documentElement);
  function cssColor(name, fallback) { return style.getPropertyValue(name).trim() || fallback; }
  var MUTED = cssColor('--muted', '#5d6576'), GRID = cssColor('--grid', '#eceef3');

  Chart.defaults.font.family = getComputedStyle(document.body).fontFamily;
  Chart.defaults.font.size = 12;
  Chart.defaults.color = MUTED;
  Chart.defaults.borderColor = GRID;
  Chart.defaults.animation = false;
  Chart.defaults.responsive = true;
  Chart.defaults.maintainAspectRatio = false;
  Chart.defaults.plugins.tooltip.backgroundColor = cssColor('--tooltip-bg', 'rgba(29, 35, 48, 0.92)');

  function fixed(value, digits) {
    return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
  }
  function ms(value) {
    if (value === null || value === undefined) return '–';
    return (value >= 100 ? fixed(value, 1) : value >= 10 ? fixed(value, 2) : fixed(value, 3)) + ' ms';
  }
  function duration(seconds) {
    var s = Math.round(seconds);
    if (s < 60) return s + ' s';
    var h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), rest = s % 60;
    return h > 0 ? h + ' h ' + m + ' min' : m + ' min ' + rest + ' s';
  }

  // A section's last second, cut short by its end, is partial: its point is hollow and the segment into it dotted, so
  // its rate (over the part covered) never reads as a fall, and its tooltip says how much of the second it covered.
  function isPartial(point) { return point !== undefined && point.partial === true; }
  function lineChart(name, yTitle) {
    var canvas = document.querySelector('canvas[data-chart="' + name + '"]');
    charts[name] = new Chart(canvas, {
      type: 'line',
      data: { datasets: [] },
      options: {
        normalized: true,
        parsing: false,
        interaction: { mode: 'nearest', axis: 'x', intersect: false },
        scales: {
          x: { type: 'linear', min: 0, title: { display: true, text: 'time into the section' }, grid: { display: false },
            ticks: { maxRotation: 0, precision: 0, callback: function (v) { return duration(v); } } },
          y: { type: 'linear', beginAtZero: true, title: { display: true, text: yTitle } },
        },
        plugins: {
          legend: { position: 'bottom', labels: { usePointStyle: true, pointStyle: 'line' } },
          tooltip: { callbacks: { label: function (context) {
            var label = context.dataset.label + ': ' + context.formattedValue;
            return isPartial(context.raw) ? label + ' (partial second: its first ' + fixed(context.raw.covered, 2) +
              ' s, the section ended)' : label;
          } } },
        },
      },
    });
  }
  lineChart('live-mbps', 'MB/s');
  lineChart('live-images', 'images/s');
  lineChart('live-frame-age', 'ms');
  lineChart('live-one-way', 'ms');
  lineChart('live-round-trip', 'ms');
  lineChart('live-cpu', 'CPU ms per s');
  lineChart('live-rss', 'MiB');

  var colors = {};
  var nextColor = 0;
  var rows = {};
  var runData = null;
  var dirty = false;

  function key(d) { return d.transport + '#' + d.repeat; }
  function lineName(d) { return runData && runData.repeat > 1 ? d.label + ' · ' + d.repeat + '/' + runData.repeat : d.label; }
  function text(id, value) { document.getElementById(id).textContent = value; }

  // A line's dash by what it shows: p99 and the transmitter dashed, the broker and the deadline dotted, the rest solid.
  var DASHES = { p99: [6, 4], transmitter: [6, 4], broker: [2, 3], deadline: [2, 3] };

  // One dataset per chart for a section (two or three where lines are figures or sides), found by its section's key.
  function existing(chartName, d, figure) {
    var datasets = charts[chartName].data.datasets;
    var id = key(d) + (figure ? ':' + figure : '');
    for (var i = 0; i < datasets.length; i++) if (datasets[i].id === id) return datasets[i];
    return undefined;
  }
  function dataset(chartName, d, figure) {
    var chart = charts[chartName];
    var id = key(d) + (figure ? ':' + figure : '');
    var found = existing(chartName, d, figure);
    if (found) return found;
    var color = colors[d.transport] || palette.baseline;
    var ds = { id: id, label: lineName(d) + (figure ? ' ' + figure : ''), data: [], borderColor: color, backgroundColor: color,
      borderWidth: 2, borderDash: DASHES[figure] || [], spanGaps: false,
      pointRadius: function (context) { return isPartial(context.raw) ? 4 : 0; },
      pointBackgroundColor: 'transparent', pointBorderColor: color,
      segment: { borderDash: function (context) {
        var into = context.chart.data.datasets[context.datasetIndex].data[context.p1DataIndex];
        return isPartial(into) ? [2, 3] : undefined;
      } } };
    chart.data.datasets.push(ds);
    return ds;
  }
  function plot(chartName, d, y, figure) {
    var point = { x: d.second, y: y };
    if (d.partial) { point.partial = true; point.covered = d.seconds; }
    dataset(chartName, d, figure).data.push(point);
  }

  function cell(row, column, value, className) {
    var td = row.cells[column];
    td.textContent = value;
    if (className !== undefined) td.className = className;
  }
  // Each table's columns by the key its heading carries (data-column), and which of them read as text.
  function columnsOf(table) {
    var columns = { table: table, index: {}, text: [], count: 0 };
    var heads = document.querySelectorAll('#' + table + ' thead th');
    for (var i = 0; i < heads.length; i++) {
      columns.index[heads[i].getAttribute('data-column')] = i;
      if (heads[i].classList.contains('text')) columns.text.push(i);
    }
    columns.count = heads.length;
    return columns;
  }
  var SECTIONS = columnsOf('live-sections');
  var COMMANDS = columnsOf('live-commands');
  var COLUMN = SECTIONS.index;
  var openLoop = false;

  // The open-loop parts (frame age, deadline columns, their chart) are shown only in a run under RATE, and there the
  // one-way columns are named the time on the link.
  function showOpenLoop(shown) {
    openLoop = shown;
    var parts = document.querySelectorAll('[data-open-loop]');
    for (var i = 0; i < parts.length; i++) parts[i].style.display = shown ? '' : 'none';
    var heads = document.querySelectorAll('#live-sections thead th[data-open-loop-title]');
    for (var j = 0; j < heads.length; j++) {
      if (!heads[j].hasAttribute('data-title')) heads[j].setAttribute('data-title', heads[j].textContent);
      heads[j].textContent = heads[j].getAttribute(shown ? 'data-open-loop-title' : 'data-title');
    }
  }
  showOpenLoop(false);

  function newRow(columns) {
    var tr = document.createElement('tr');
    for (var c = 0; c < columns.count; c++) {
      var td = document.createElement('td');
      td.className = columns.text.indexOf(c) >= 0 ? 'text' : '';
      tr.appendChild(td);
    }
    // A cell under an open-loop heading shows and hides with it.
    var heads = document.querySelectorAll('#' + columns.table + ' thead th');
    for (var i = 0; i < heads.length; i++) {
      if (!heads[i].hasAttribute('data-open-loop')) continue;
      tr.cells[i].setAttribute('data-open-loop', '');
      tr.cells[i].style.display = openLoop ? '' : 'none';
    }
    return tr;
  }
  function count(value) { return value === null || value === undefined ? '–' : String(value); }

  function onRun(d) {
    // Another run than the one drawn (the page was away across a run's end): drawn afresh from GET /.
    if (runData !== null && runData.startedAt !== d.startedAt) {
      location.reload();
      return;
    }
    runData = d;
    var body = document.querySelector('#live-sections tbody');
    while (body.firstChild) body.removeChild(body.firstChild);
    rows = {};
    var commandBody = document.querySelector('#live-commands tbody');
    while (commandBody.firstChild) commandBody.removeChild(commandBody.firstChild);
    document.getElementById('live-commands-card').hidden = true;
    showOpenLoop(d.ratePerSecond !== null);
    for (var repeat = 1; repeat <= d.repeat; repeat++) {
      d.transports.forEach(function (t) {
        var tr = newRow(SECTIONS);
        cell(tr, COLUMN.transport, t.label, 'text transport');
        cell(tr, COLUMN.repeat, d.repeat > 1 ? repeat + '/' + d.repeat : '');
        cell(tr, COLUMN.state, 'waiting', 'text state-waiting');
        tr.setAttribute('data-section', t.name + '#' + repeat);
        rows[t.name + '#' + repeat] = tr;
        body.appendChild(tr);
      });
    }
    status('Run in progress, started ' + d.startedAt + '. The report appears here when it ends.');
    var count = d.imageCount !== null ? d.imageCount + ' images' : 'for ' + duration(d.durationMs / 1000);
    text('live-settings', d.imageDescription + ', ' + count + ' per section, window ' + d.window +
      (d.ratePerSecond !== null ? ', RATE ' + d.ratePerSecond + ' images/s' : '') +
      (d.deadline ? ', deadline ' + ms(d.deadline.deadlineMs) + ' from each frame\'s due time (at most ' +
        fixed(d.deadline.allowedLateShare * 100, 1) + ' % may miss it)' : '') +
      (d.commandRatePerSecond ? ', commands at ' + d.commandRatePerSecond + '/s' : '') +
      (d.clients > 1 ? ', ' + d.clients + ' clients' : '') + (d.repeat > 1 ? ', ' + d.repeat + ' repeats' : '') + '.');
  }

  function onSectionStart(d) {
    if (colors[d.transport] === undefined)
      colors[d.transport] = d.baseline ? palette.baseline : palette.transports[nextColor++ % palette.transports.length];
    if (d.clockOffsetBoundMs !== null)
      text('live-clock', d.label + ': the sides run on different hosts; each one-way time is good to ± ' +
        ms(d.clockOffsetBoundMs) + ' (the clock offset\'s bound).');
    var row = rows[key(d)];
    if (!row) return;
    cell(row, COLUMN.state, 'running', 'text state-running');
    cell(row, COLUMN.progress, d.imageCount !== null ? '0/' + d.imageCount : '0');
  }

  // The deadline as a dotted line, once a section's frame ages come within half of it (from then on, and back over the
  // section's earlier points): far below it, it would flatten the ages against the axis.
  function plotDeadline(d) {
    if (!d.deadline) return;
    if (!existing('live-frame-age', d, 'deadline')) {
      var worst = d.frameAgeP99Ms !== null ? d.frameAgeP99Ms : d.frameAgeP50Ms;
      if (worst === null || worst < d.deadline.deadlineMs / 2) return;
      var line = dataset('live-frame-age', d, 'deadline');
      dataset('live-frame-age', d, 'p50').data.forEach(function (p) {
        if (p.x < d.second) line.data.push({ x: p.x, y: d.deadline.deadlineMs });
      });
    }
    plot('live-frame-age', d, d.deadline.deadlineMs, 'deadline');
  }

  // The deadline figures (so far, or final) in a section's row.
  function deadlineCells(row, deadline) {
    if (!deadline) return;
    cell(row, COLUMN.late, count(deadline.lateCount));
    cell(row, COLUMN.veryLate, count(deadline.veryLateCount));
    cell(row, COLUMN.gap, ms(deadline.longestGapMs));
    cell(row, COLUMN.jitter, ms(deadline.jitterP99Ms));
  }

  function onSecond(d) {
    plot('live-mbps', d, d.throughputMBps);
    plot('live-images', d, d.imagesPerSecond);
    // Frame ages come with the round trips that give them (the transmitter's batches): no point where none came.
    if (d.frameAges > 0) {
      plot('live-frame-age', d, d.frameAgeP50Ms, 'p50');
      plot('live-frame-age', d, d.frameAgeP99Ms, 'p99');
      plotDeadline(d);
    }
    plot('live-one-way', d, d.oneWayP50Ms, 'p50');
    plot('live-one-way', d, d.oneWayP99Ms, 'p99');
    // Round trips come with some seconds only (the transmitter's batches): no point where none came.
    if (d.roundTrips > 0) {
      plot('live-round-trip', d, d.roundTripP50Ms, 'p50');
      plot('live-round-trip', d, d.roundTripP99Ms, 'p99');
    }
    plot('live-cpu', d, d.receiverCpuMsPerSecond, 'receiver');
    plot('live-rss', d, d.receiverRssBytes / 1048576, 'receiver');
    if (d.transmitter !== null) {
      plot('live-cpu', d, d.transmitter.cpuMsPerSecond, 'transmitter');
      plot('live-rss', d, d.transmitter.rssBytes / 1048576, 'transmitter');
    }
    if (d.broker !== null) {
      plot('live-cpu', d, d.broker.cpuMsPerSecond, 'broker');
      plot('live-rss', d, d.broker.rssBytes / 1048576, 'broker');
    }
    dirty = true;
    var row = rows[key(d)];
    if (!row) return;
    cell(row, COLUMN.progress, d.imageCount !== null ? d.recorded + '/' + d.imageCount : String(d.recorded));
    cell(row, COLUMN.eta, d.etaSeconds === null ? '–' : duration(d.etaSeconds));
    cell(row, COLUMN.mbps, fixed(d.throughputMBps, 1));
    cell(row, COLUMN.images, fixed(d.imagesPerSecond, 0));
    cell(row, COLUMN.p50, ms(d.oneWayP50Ms));
    cell(row, COLUMN.p99, ms(d.oneWayP99Ms));
    if (d.frameAges > 0) {
      cell(row, COLUMN.ageP50, ms(d.frameAgeP50Ms));
      cell(row, COLUMN.ageP99, ms(d.frameAgeP99Ms));
    }
    deadlineCells(row, d.deadline);
    if (d.roundTrips > 0) cell(row, COLUMN.rttP99, ms(d.roundTripP99Ms));
  }

  // The command lane's row for a section that carried one (or says why it did not run).
  function commandRow(d) {
    var lane = d.commands;
    if (!lane) return;
    document.getElementById('live-commands-card').hidden = false;
    var tr = newRow(COMMANDS);
    var at = COMMANDS.index;
    cell(tr, at.transport, d.label, 'text transport');
    cell(tr, at.repeat, runData && runData.repeat > 1 ? d.repeat + '/' + runData.repeat : '');
    if (lane.notRun !== null) cell(tr, at.lane, 'not run: ' + lane.notRun, 'text');
    else {
      cell(tr, at.lane, lane.lane === null ? '–' : lane.lane, 'text');
      cell(tr, at.aloneP50, ms(lane.alone.oneWayP50Ms));
      cell(tr, at.aloneP99, ms(lane.alone.oneWayP99Ms));
      cell(tr, at.besideP50, ms(lane.beside.oneWayP50Ms));
      cell(tr, at.besideP99, ms(lane.beside.oneWayP99Ms));
      cell(tr, at.rttP50, ms(lane.beside.roundTripP50Ms));
      cell(tr, at.rttP99, ms(lane.beside.roundTripP99Ms));
      cell(tr, at.factor, lane.delayFactorP50 === null ? '–' : fixed(lane.delayFactorP50, 1) + ' ×');
      cell(tr, at.unacked, String(lane.alone.unacknowledged + lane.beside.unacknowledged));
      cell(tr, at.corrupt, String(lane.alone.corrupt + lane.beside.corrupt));
    }
    tr.setAttribute('data-section', key(d));
    document.querySelector('#live-commands tbody').appendChild(tr);
  }

  function onSectionEnd(d) {
    commandRow(d);
    var row = rows[key(d)];
    if (!row) return;
    cell(row, COLUMN.state, 'done', 'text');
    cell(row, COLUMN.progress, String(d.okCount + d.corruptCount));
    cell(row, COLUMN.eta, '');
    cell(row, COLUMN.mbps, d.throughputMBps === null ? '–' : fixed(d.throughputMBps, 1));
    cell(row, COLUMN.images, d.imagesPerSecond === null ? '–' : fixed(d.imagesPerSecond, 0));
    cell(row, COLUMN.p50, ms(d.oneWayP50Ms));
    cell(row, COLUMN.p99, ms(d.oneWayP99Ms));
    cell(row, COLUMN.ageP50, ms(d.frameAgeP50Ms));
    cell(row, COLUMN.ageP99, ms(d.frameAgeP99Ms));
    deadlineCells(row, d.deadline);
    cell(row, COLUMN.rttP99, ms(d.roundTripP99Ms));
    cell(row, COLUMN.lost, String(d.lostCount));
    cell(row, COLUMN.corrupt, String(d.corruptCount));
    var verdict = row.cells[COLUMN.verdict];
    verdict.textContent = '';
    var badge = document.createElement('span');
    badge.className = d.ok ? 'badge ok' : 'badge failed';
    badge.textContent = d.ok ? 'OK' : 'FAILED';
    verdict.appendChild(badge);
    if (!d.ok && d.failure !== null) {
      var reason = document.createElement('span');
      reason.className = 'reason';
      reason.textContent = ' ' + d.failure;
      verdict.appendChild(reason);
    }
    if (!d.ok) row.classList.add('failed');
  }

  // What the page says of the run while its stream is open; a reconnection's notice stands in for it meanwhile.
  var statusText = document.getElementById('live-status').textContent;
  function status(value) {
    statusText = value;
    text('live-status', value);
  }

  function onRunEnd(d, message) {
    source.close();
    source = null;
    flush();
    // Reload once per run's end: should GET / still not serve a report (its files failed), the page stays as it is.
    var endId = runData ? runData.startedAt + '#' + message.lastEventId : message.lastEventId;
    var seen = null;
    try { seen = sessionStorage.getItem('itb-live-reloaded'); } catch (e) { seen = null; }
    status(d.succeeded ? 'The run ended: loading its report…' : 'The run ended incomplete' +
      (d.stopReason !== null ? ' (' + d.stopReason + ')' : '') + ': loading its report…');
    if (seen === endId) {
      status('The run ended, but its report could not be shown here: see the receiver\'s log.');
      return;
    }
    try { sessionStorage.setItem('itb-live-reloaded', endId); } catch (e) { /* private mode: reload anyway */ }
    location.reload();
  }

  // Reconnecting: the first wait 1 s, doubled at each failure up to 30 s, each drawn between half and all of it (so
  // pages cut off together do not come back together). The waits start over once a stream has stayed open 10 s: one
  // cut at once (the receiver full, a proxy) keeps backing off.
  var RETRY_FIRST_MS = 1000, RETRY_MAX_MS = 30000, STEADY_MS = 10000;
  var source = null;
  var lastEventId = '';
  var failures = 0;
  var openedAt = null;
  var handlers = { 'run': onRun, 'section-start': onSectionStart, 'second': onSecond, 'section-end': onSectionEnd,
    'run-end': onRunEnd };

  // GET /events from the last event had: EventSource sends Last-Event-ID only on its own reconnections, so a new one
  // carries it in the query (?lastEventId=), which the receiver reads alike.
  function connect() {
    var url = '/events' + (lastEventId !== '' ? '?lastEventId=' + encodeURIComponent(lastEventId) : '');
    var opened = new EventSource(url);
    source = opened;
    Object.keys(handlers).forEach(function (name) {
      opened.addEventListener(name, function (message) {
        if (source !== opened) return;
        if (message.lastEventId !== '') lastEventId = message.lastEventId;
        handlers[name](JSON.parse(message.data), message);
      });
    });
    opened.addEventListener('open', function () {
      if (source !== opened) return;
      openedAt = Date.now();
      text('live-status', statusText);
    });
    // A refusal closes an EventSource for good, and a dropped stream would come back at the browser's own pace:
    // either way this one is closed and the next opened after the page's wait.
    opened.addEventListener('error', function () {
      if (source !== opened) return;
      opened.close();
      source = null;
      if (openedAt !== null && Date.now() - openedAt >= STEADY_MS) failures = 0;
      openedAt = null;
      var capMs = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * Math.pow(2, failures));
      var waitMs = capMs / 2 + Math.random() * capMs / 2;
      failures++;
      text('live-status', 'Lost the connection to the receiver: trying again in ' + Math.ceil(waitMs / 1000) +
        ' s (this page keeps trying while it is open).');
      setTimeout(function () {
        text('live-status', 'Connecting again to the receiver…');
        connect();
      }, waitMs);
    });
  }
  connect();

  // Charts redrawn at most four times a second: a late page replays a long history as a burst of events.
  function flush() {
    if (!dirty) return;
    dirty = false;
    Object.keys(charts).forEach(function (name) { charts[name].update('none'); });
  }
  setInterval(flush, 250);
})();
