// The _xmltrain extension: the engine under the xmltrain package (python/xmltrain/), which turns
// scipy matrices and keywords into what these functions take.
#include "python/src/bindings.h"

NB_MODULE(_xmltrain, m) {
  m.doc() = "xmltrain's engine; use the xmltrain package, not this module";
  xmlt::python::BindErrors(m);
  xmlt::python::BindRead(m);
  xmlt::python::BindModel(m);
  xmlt::python::BindTrain(m);
}
