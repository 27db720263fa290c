// kubecheck decodes Kubernetes manifests strictly against the API types of k8s.io/api (and of
// prometheus-operator's monitoring.coreos.com/v1, for the chart's PodMonitor and PrometheusRule), the
// way an API server with field validation set to Strict does: an unknown or duplicated field,
// a wrong type, or a kind it does not know fails. It reads multi-document YAML from the files
// named on the command line (or stdin with "-"), or builds a kustomization first with
// kustomize's own library (as `kubectl kustomize` does), and prints one line per object it accepts.
//
// With --kstatus it says instead whether live objects (`kubectl get -o json`, a List or one object) are
// ready the way Helm 4's wait and Flux decide it: kstatus, sigs.k8s.io/cli-utils' own code, one line per
// object with its status and why, exiting 1 unless every one is Current.
//
//	kubecheck FILE...
//	kubecheck --kustomize DIR
//	kubecheck --kstatus FILE
package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: kubecheck FILE... (\"-\" reads stdin) | kubecheck --kustomize DIR | kubecheck --kstatus FILE")
		os.Exit(2)
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme,
		networkingv1.AddToScheme, policyv1.AddToScheme, rbacv1.AddToScheme, coordinationv1.AddToScheme,
		monitoringv1.AddToScheme, admissionregistrationv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	decoder := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()

	if os.Args[1] == "--kstatus" {
		if len(os.Args) != 3 {
			fmt.Fprintln(os.Stderr, "usage: kubecheck --kstatus FILE (\"-\" reads stdin; kubectl get -o json's output)")
			os.Exit(2)
		}
		current, err := kstatus(os.Args[2])
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", os.Args[2], err)
			os.Exit(2)
		}
		if !current {
			os.Exit(1)
		}
		return
	}
	if os.Args[1] == "--kustomize" {
		if len(os.Args) != 3 {
			fmt.Fprintln(os.Stderr, "usage: kubecheck --kustomize DIR")
			os.Exit(2)
		}
		built, err := kustomize(os.Args[2])
		if err == nil {
			err = decodeAll(decoder, bytes.NewReader(built))
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", os.Args[2], err)
			os.Exit(1)
		}
		return
	}
	failed := false
	for _, name := range os.Args[1:] {
		if err := check(decoder, name); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

func check(decoder runtime.Decoder, name string) error {
	in, err := open(name)
	if err != nil {
		return err
	}
	defer in.Close()
	return decodeAll(decoder, in)
}

// open opens the file named, or stdin for "-".
func open(name string) (io.ReadCloser, error) {
	if name == "-" {
		return io.NopCloser(os.Stdin), nil
	}
	return os.Open(name)
}

// kstatus prints each object's kstatus and says whether every one is Current.
func kstatus(name string) (bool, error) {
	in, err := open(name)
	if err != nil {
		return false, err
	}
	defer in.Close()
	data, err := io.ReadAll(in)
	if err != nil {
		return false, err
	}
	read, _, err := unstructured.UnstructuredJSONScheme.Decode(data, nil, nil)
	if err != nil {
		return false, err
	}
	var objects []unstructured.Unstructured
	switch read := read.(type) {
	case *unstructured.UnstructuredList:
		objects = read.Items
	case *unstructured.Unstructured:
		objects = []unstructured.Unstructured{*read}
	}
	if len(objects) == 0 {
		return false, errors.New("no objects")
	}
	current := true
	for i := range objects {
		result, err := status.Compute(&objects[i])
		if err != nil {
			return false, fmt.Errorf("%s/%s: %w", objects[i].GetKind(), objects[i].GetName(), err)
		}
		fmt.Printf("%s/%s: %s: %s\n", objects[i].GetKind(), objects[i].GetName(), result.Status, result.Message)
		current = current && result.Status == status.CurrentStatus
	}
	return current, nil
}

func kustomize(dir string) ([]byte, error) {
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, err
	}
	return resources.AsYaml()
}

func decodeAll(decoder runtime.Decoder, in io.Reader) error {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(in))
	objects := 0
	for doc := 1; ; doc++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("document %d: %w", doc, err)
		}
		if len(bytes.TrimSpace(stripComments(raw))) == 0 {
			continue
		}
		obj, gvk, err := decoder.Decode(raw, nil, nil)
		if err != nil {
			return fmt.Errorf("document %d: %w", doc, err)
		}
		objects++
		fmt.Printf("ok %s %s %s\n", gvk.GroupVersion(), gvk.Kind, nameOf(obj))
	}
	if objects == 0 {
		return errors.New("no Kubernetes object in it")
	}
	return nil
}

func nameOf(obj runtime.Object) string {
	if named, ok := obj.(interface{ GetName() string }); ok {
		return named.GetName()
	}
	return ""
}

func stripComments(doc []byte) []byte {
	var out bytes.Buffer
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			out.Write(line)
			out.WriteByte('\n')
		}
	}
	return out.Bytes()
}
