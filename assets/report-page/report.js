
(function () {
  'use strict';
  var charts = {};
  window.__charts = charts;
  var specs = JSON.parse(document.getElementById('itb-chart-specs').textContent);
  // The charts' colours come from report.css's variables, so they follow its light or dark theme.
  var style = getComputedStyle(document.documentElement);
  function cssColor(name, fallback) { return style.getPropertyValue(name).trim() || fallback; }
  var INK = cssColor('--chart-ink', '#2b3140'), MUTED = cssColor('--muted', '#5d6576'), FAINT = cssColor('--chart-faint', '#9aa1ad');
  var GRID = cssColor('--grid', '#eceef3');

  Chart.defaults.font.family = getComputedStyle(document.body).fontFamily;
  Chart.defaults.font.size = 12;
  Chart.defaults.color = MUTED;
  Chart.defaults.borderColor = GRID;
  Chart.defaults.animation = false;
  Chart.defaults.responsive = true;
  Chart.defaults.maintainAspectRatio = false;
  Chart.defaults.plugins.tooltip.backgroundColor = cssColor('--tooltip-bg', 'rgba(29, 35, 48, 0.92)');
  Chart.defaults.plugins.tooltip.padding = 8;
  Chart.defaults.plugins.tooltip.boxPadding = 4;

  function fixed(value, digits) {
    return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
  }
  function ms(value) {
    return value >= 100 ? fixed(value, 1) : value >= 10 ? fixed(value, 2) : fixed(value, 3);
  }
  function percentileText(x) {
    var p = (1 - 1 / x) * 100;
    return String(Number(p.toFixed(p >= 99 ? 3 : 2))) + '%';
  }
  function axisTitle(text) {
    return { display: true, text: text, color: MUTED, font: { size: 12 } };
  }

  // One legend entry per transport; clicking it hides or shows both runs of that transport.
  var transportLegend = {
    position: 'bottom',
    labels: {
      usePointStyle: true,
      pointStyle: 'line',
      pointStyleWidth: 24,
      padding: 14,
      generateLabels: function (chart) {
        var seen = {};
        var items = [];
        chart.data.datasets.forEach(function (ds, i) {
          if (seen[ds.transport]) return;
          seen[ds.transport] = true;
          var visible = chart.data.datasets.some(function (d, j) { return d.transport === ds.transport && chart.isDatasetVisible(j); });
          items.push({ text: ds.legendLabel, datasetIndex: i, strokeStyle: ds.color, fillStyle: ds.color, lineWidth: 3, pointStyle: 'line', hidden: !visible, fontColor: ds.anyData ? INK : FAINT });
        });
        return items;
      },
    },
    onClick: function (event, item, legend) {
      var chart = legend.chart;
      var key = chart.data.datasets[item.datasetIndex].transport;
      chart.data.datasets.forEach(function (d, j) { if (d.transport === key) chart.setDatasetVisibility(j, item.hidden); });
      chart.update();
    },
  };

  // "45 s", "6 min 40 s", "2 h 5 min": a time since the section began, for axes and tooltips.
  function duration(seconds) {
    var s = Math.round(seconds);
    if (s < 60) return s + ' s';
    var h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), rest = s % 60;
    var parts = h > 0 ? [h + ' h', m > 0 ? m + ' min' : '', rest > 0 ? rest + ' s' : ''] : [m + ' min', rest > 0 ? rest + ' s' : ''];
    return parts.filter(Boolean).join(' ');
  }
  // A tick step of whole seconds, minutes or hours, about eight ticks across.
  var STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];
  function stepFor(span) {
    for (var i = 0; i < STEPS.length; i++) if (span / STEPS[i] <= 9) return STEPS[i];
    return Math.ceil(span / 9 / 86400) * 86400;
  }

  function overTimeConfig(spec) {
    var value = spec.unit === 'ms' ? function (v) { return ms(v) + ' ms'; } : function (v) { return fixed(v, 1) + ' MB/s'; };
    var step = stepFor(spec.xMax);
    var figures = spec.datasets.some(function (d) { return d.figure !== ''; });
    return {
      type: 'line',
      data: { datasets: spec.datasets },
      options: {
        // Each line's x ascends, no two alike: Chart.js may skip the sorting and checks it would do.
        normalized: true,
        // One line a transport: every transport at that second. Several (p50, p99, band): the line nearest the pointer, or twenty rows would cover the chart.
        interaction: { mode: 'nearest', axis: figures ? 'xy' : 'x', intersect: false },
        scales: {
          x: {
            type: 'linear', min: 0, max: spec.xMax, title: axisTitle(spec.xTitle), grid: { display: false },
            // Whole steps only: the axis's end (6 min 40 s) would crowd the last one (6 min).
            afterBuildTicks: function (axis) { axis.ticks = axis.ticks.filter(function (t) { return t.value % step === 0; }); },
            ticks: { stepSize: step, maxRotation: 0, callback: function (v) { return duration(v); } },
          },
          y: { type: 'linear', beginAtZero: true, title: axisTitle(spec.yTitle) },
        },
        plugins: {
          legend: transportLegend,
          tooltip: {
            filter: function (item) { return item.parsed.y !== null && !Number.isNaN(item.parsed.y); },
            callbacks: {
              title: function (items) {
                if (!items.length) return '';
                var ds = items[0].dataset, from = items[0].parsed.x;
                var to = Math.min(from + (ds.bucketSeconds || 1), ds.spanSeconds || from + 1);
                return duration(from) + ' – ' + duration(to);
              },
              label: function (ctx) { return ctx.dataset.label + ': ' + value(ctx.parsed.y); },
            },
          },
        },
      },
    };
  }

  function percentilesConfig(spec) {
    return {
      type: 'line',
      data: { datasets: spec.datasets },
      options: {
        interaction: { mode: 'nearest', intersect: false },
        scales: {
          x: {
            type: 'logarithmic', min: 1, max: spec.xMax, title: axisTitle(spec.xTitle), grid: { color: GRID },
            afterBuildTicks: function (axis) {
              // On a long axis 75 % and 95 % crowd the left end; 50 %, 90 %, 99 %, … remain.
              var positions = axis.max >= 1000 ? spec.ticks.filter(function (v) { return v !== 4 && v !== 20; }) : spec.ticks;
              axis.ticks = positions.filter(function (v) { return v >= axis.min && v <= axis.max * 1.0001; }).map(function (v) { return { value: v }; });
            },
            ticks: { autoSkip: false, maxRotation: 0, callback: function (value) { return percentileText(value); } },
          },
          y: { type: 'logarithmic', title: axisTitle(spec.yTitle) },
        },
        plugins: {
          legend: transportLegend,
          tooltip: {
            callbacks: {
              title: function (items) { return items.length ? 'p' + percentileText(items[0].parsed.x).replace('%', '') : ''; },
              label: function (ctx) { return ctx.dataset.label + ': ' + ms(ctx.parsed.y) + ' ms'; },
            },
          },
        },
      },
    };
  }

  // Writes each bar's value above it; all of them or none, so no bar looks unlabelled by mistake.
  function barValues(digits) {
    return {
      id: 'itbBarValues',
      afterDatasetsDraw: function (chart) {
        var ctx = chart.ctx;
        var labels = [];
        ctx.save();
        ctx.font = '11px ' + Chart.defaults.font.family;
        chart.data.datasets.forEach(function (ds, i) {
          if (!chart.isDatasetVisible(i)) return;
          chart.getDatasetMeta(i).data.forEach(function (bar, j) {
            var value = ds.data[j];
            if (value === null || value === undefined) return;
            labels.push({ text: fixed(value, digits), x: bar.x, y: bar.y, width: bar.width });
          });
        });
        var fits = labels.every(function (label) { return ctx.measureText(label.text).width <= label.width + 4; });
        if (fits) {
          ctx.fillStyle = MUTED;
          ctx.textAlign = 'center';
          ctx.textBaseline = 'bottom';
          labels.forEach(function (label) { ctx.fillText(label.text, label.x, label.y - 3); });
        }
        ctx.restore();
      },
    };
  }

  function barsConfig(spec) {
    return {
      type: 'bar',
      data: { labels: spec.labels, datasets: spec.datasets },
      options: {
        interaction: { mode: 'index', intersect: false },
        scales: {
          x: { grid: { display: false }, ticks: { color: INK, maxRotation: 0, autoSkip: false } },
          y: { beginAtZero: true, grace: '12%', title: axisTitle(spec.yTitle) },
        },
        plugins: {
          legend: { display: spec.legend, position: 'bottom', labels: { boxWidth: 12, boxHeight: 12, padding: 14 } },
          tooltip: {
            callbacks: {
              title: function (items) { return items.length ? spec.titles[items[0].dataIndex] : ''; },
              label: function (ctx) {
                var value = ctx.dataset.data[ctx.dataIndex];
                return ctx.dataset.label + ': ' + (value === null ? 'no data' : fixed(value, spec.digits) + ' ' + spec.unit);
              },
            },
          },
        },
      },
      plugins: [barValues(spec.digits)],
    };
  }

  var builders = { 'over-time': overTimeConfig, percentiles: percentilesConfig, bars: barsConfig };
  specs.forEach(function (spec) {
    var canvas = document.querySelector('canvas[data-chart="' + spec.name + '"]');
    charts[spec.name] = new Chart(canvas, builders[spec.kind](spec));
  });

  document.querySelectorAll('input[data-log-toggle]').forEach(function (input) {
    input.addEventListener('change', function () {
      var chart = charts[input.getAttribute('data-log-toggle')];
      chart.options.scales.y.type = input.checked ? 'logarithmic' : 'linear';
      chart.update();
    });
  });

  // Sortable tables: numbers by value, text alphabetically; empty cells always last.
  document.querySelectorAll('table.sortable').forEach(function (table) {
    var body = table.tBodies[0];
    var headers = Array.prototype.slice.call(table.tHead.rows[0].cells);
    headers.forEach(function (th, column) {
      var button = th.querySelector('button');
      if (!button) return;
      button.addEventListener('click', function () {
        var ascending = th.getAttribute('aria-sort') !== 'ascending';
        headers.forEach(function (other) { other.removeAttribute('aria-sort'); });
        th.setAttribute('aria-sort', ascending ? 'ascending' : 'descending');
        var numeric = th.getAttribute('data-type') === 'number';
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var ka = a.cells[column].getAttribute('data-sort') || '';
          var kb = b.cells[column].getAttribute('data-sort') || '';
          if (ka === '' || kb === '') {
            if (ka === kb) return Number(a.getAttribute('data-index')) - Number(b.getAttribute('data-index'));
            return ka === '' ? 1 : -1;
          }
          var order = numeric ? Number(ka) - Number(kb) : ka.localeCompare(kb);
          if (order === 0) return Number(a.getAttribute('data-index')) - Number(b.getAttribute('data-index'));
          return ascending ? order : -order;
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
  });
})();
