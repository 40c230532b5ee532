// Greys out the budget, frequency and depth values that cannot be combined
// with the others chosen, before the form is sent. The server checks anyway.
// A field left empty (a bulk edit's "leave as it is") stands for any of its
// values: an option is greyed out only when every one of them forbids it.
(function () {
  "use strict";
  var data = document.getElementById("compat-matrix");
  if (!data) return;
  var forbidden = new Set(JSON.parse(data.textContent).forbidden);
  document.querySelectorAll("form").forEach(function (form) {
    var find = function (name) { return form.querySelector("select[name$='" + name + "']"); };
    var selects = { budget: find("budget"), frequency: find("frequency"), depth: find("depth") };
    if (!selects.budget || !selects.frequency || !selects.depth) return;
    var values = function (name) {
      return Array.prototype.map.call(selects[name].options, function (o) { return o.value; })
        .filter(function (v) { return v; });
    };
    var forbids = function (combo) {  // every value of the empty fields is forbidden with the others
      var budgets = combo.budget ? [combo.budget] : values("budget");
      var frequencies = combo.frequency ? [combo.frequency] : values("frequency");
      var depths = combo.depth ? [combo.depth] : values("depth");
      return budgets.every(function (b) {
        return frequencies.every(function (f) {
          return depths.every(function (d) { return forbidden.has(b + "|" + f + "|" + d); });
        });
      });
    };
    var update = function () {
      var current = { budget: selects.budget.value, frequency: selects.frequency.value, depth: selects.depth.value };
      Object.keys(selects).forEach(function (name) {
        Array.prototype.forEach.call(selects[name].options, function (option) {
          if (!option.value) return;
          var combo = Object.assign({}, current);
          combo[name] = option.value;
          var blocked = forbids(combo);
          option.disabled = blocked && option.value !== current[name];
          option.classList.toggle("text-body-tertiary", blocked);
        });
        var bad = forbids(current);
        selects[name].classList.toggle("is-invalid", bad);
      });
    };
    Object.keys(selects).forEach(function (name) { selects[name].addEventListener("change", update); });
    update();
  });
})();
