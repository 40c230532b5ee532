// The pages' own behaviour. Scripts come from static files only (the Content-Security-Policy allows
// no inline script nor on…="" handler): pages say what they need with data- attributes.
(function () {
  "use strict";
  // <form data-confirm="Question?">: asks before sending. Listened on the document, so that forms
  // htmx swaps in later (a polled table's Stop buttons) ask too.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (form instanceof HTMLFormElement && form.dataset.confirm && !window.confirm(form.dataset.confirm)) {
      event.preventDefault();
    }
  });
})();
