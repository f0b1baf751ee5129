// kubeconfig files: kube_config_from_file never crashes. Inputs that name other files (token,
// CA, client certificate) are skipped: they would be read from outside the repository.
#include "fuzz_support.h"
#include "vigil/kube/kube_api.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static vigil::fuzz::ScratchFile file(".kubeconfig");
  const auto text = vigil::fuzz::as_text(data, size);
  if (vigil::fuzz::names_other_files(
          text, {"tokenFile", "certificate-authority:", "client-certificate:", "client-key:",
                 "exec:", "auth-provider"}))
    return 0;
  auto c = vigil::kube::kube_config_from_file(file.write(text));
  if (!c.ok() && c.error().message.empty()) vigil::fuzz::broken("refused without a message");
  return 0;
}
