(function () {
  'use strict';
  // Added only to the report the receiver serves at GET / (never to report.html on disk): a page left open on the last
  // run's report asks GET /progress every few seconds and, once the next run has started, reloads into its live page.
  var PERIOD_MS = 5000;
  function check() {
    fetch('/progress', { cache: 'no-store' })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (progress) {
        if (progress && progress.inProgress === true) location.reload();
        else setTimeout(check, PERIOD_MS);
      })
      .catch(function () { setTimeout(check, PERIOD_MS); });
  }
  setTimeout(check, PERIOD_MS);
})();
