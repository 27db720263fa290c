package dev.warden.gate;

import io.fabric8.kubernetes.api.model.AuthInfo;
import io.fabric8.kubernetes.api.model.AuthProviderConfig;
import io.fabric8.kubernetes.api.model.Cluster;
import io.fabric8.kubernetes.api.model.Config;
import io.fabric8.kubernetes.api.model.Context;
import io.fabric8.kubernetes.api.model.ExecConfig;
import io.fabric8.kubernetes.api.model.ExecEnvVar;
import io.fabric8.kubernetes.api.model.FieldsV1;
import io.fabric8.kubernetes.api.model.ListMeta;
import io.fabric8.kubernetes.api.model.ManagedFieldsEntry;
import io.fabric8.kubernetes.api.model.MicroTime;
import io.fabric8.kubernetes.api.model.MicroTimeSerDes;
import io.fabric8.kubernetes.api.model.NamedAuthInfo;
import io.fabric8.kubernetes.api.model.NamedCluster;
import io.fabric8.kubernetes.api.model.NamedContext;
import io.fabric8.kubernetes.api.model.NamedExtension;
import io.fabric8.kubernetes.api.model.ObjectMeta;
import io.fabric8.kubernetes.api.model.OwnerReference;
import io.fabric8.kubernetes.api.model.Preferences;
import io.fabric8.kubernetes.api.model.Status;
import io.fabric8.kubernetes.api.model.StatusCause;
import io.fabric8.kubernetes.api.model.StatusDetails;
import io.fabric8.kubernetes.api.model.coordination.v1.Lease;
import io.fabric8.kubernetes.api.model.coordination.v1.LeaseList;
import io.fabric8.kubernetes.api.model.coordination.v1.LeaseSpec;
import io.quarkus.runtime.annotations.RegisterForReflection;

/**
 * The Kubernetes types {@link LeaseElection} reads and writes through Jackson, registered for reflection in the
 * native executable: the Lease, its metadata, the API server's Status on a refusal, the list type fabric8 names
 * after the Lease, and, outside a pod, the kubeconfig {@link KubernetesAccess} reads as kubectl does. Only these:
 * Quarkus would register every model class if it indexed fabric8's jars (application.properties removes their
 * indexes; FabricIndexesTest keeps that list whole), half the executable. LeaseInteropIT and KubeletInteropIT run
 * the election against a real API server in the executable ({@code -Pnative,interop}).
 */
@RegisterForReflection(targets = {Lease.class, LeaseSpec.class, LeaseList.class, ObjectMeta.class, ManagedFieldsEntry.class,
        FieldsV1.class, OwnerReference.class, ListMeta.class, MicroTime.class, MicroTimeSerDes.Serializer.class,
        MicroTimeSerDes.Deserializer.class, Status.class, StatusDetails.class, StatusCause.class,
        Config.class, NamedCluster.class, Cluster.class, NamedContext.class, Context.class, NamedAuthInfo.class, AuthInfo.class,
        AuthProviderConfig.class, ExecConfig.class, ExecEnvVar.class, NamedExtension.class, Preferences.class})
final class LeaseModel {

    private LeaseModel() {
    }
}
