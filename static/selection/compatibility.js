// Greys out the budget, frequency and depth values that cannot be combined
// with the others chosen, before the form is sent. The server checks anyway.
(function () {
  "use strict";
  var data = document.getElementById("compat-matrix");
  if (!data) return;
  var forbidden = new Set(JSON.parse(data.textContent).forbidden);
  document.querySelectorAll("form").forEach(function (form) {
    var find = function (name) { return form.querySelector("select[name$='" + name + "']"); };
    var selects = { budget: find("budget"), frequency: find("frequency"), depth: find("depth") };
    if (!selects.budget || !selects.frequency || !selects.depth) return;
    var update = function () {
      var current = { budget: selects.budget.value, frequency: selects.frequency.value, depth: selects.depth.value };
      Object.keys(selects).forEach(function (name) {
        Array.prototype.forEach.call(selects[name].options, function (option) {
          if (!option.value) return;
          var combo = Object.assign({}, current);
          combo[name] = option.value;
          var blocked = forbidden.has(combo.budget + "|" + combo.frequency + "|" + combo.depth);
          option.disabled = blocked && option.value !== current[name];
          option.classList.toggle("text-body-tertiary", blocked);
        });
        var bad = forbidden.has(current.budget + "|" + current.frequency + "|" + current.depth);
        selects[name].classList.toggle("is-invalid", bad);
      });
    };
    Object.keys(selects).forEach(function (name) { selects[name].addEventListener("change", update); });
    update();
  });
})();
